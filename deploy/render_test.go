package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/scheme"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

const (
	chartDir  = "helm/jetgate"
	release   = "shop"
	namespace = "queues"
	fullname  = "shop-jetgate"
)

// baseValues are the values every test starts from: the chart's defaults
// plus the one thing they lack, authentication.
func baseValues() map[string]any {
	return map[string]any{"config": map[string]any{
		"streams":   []any{map[string]any{"name": "ORDERS", "subjects": []any{"orders.>"}}},
		"consumers": []any{map[string]any{"stream": "ORDERS", "name": "billing"}},
		"auth": map[string]any{
			"api_keys": []any{map[string]any{"principal": "billing-svc", "sha256": strings.Repeat("ab", 32)}},
			"grants":   []any{map[string]any{"principal": "billing-svc", "stream": "ORDERS", "actions": []any{"fetch", "settle"}}},
		},
	}}
}

// with is base with the values at dotted paths set.
func with(base map[string]any, kv ...any) map[string]any {
	for i := 0; i < len(kv); i += 2 {
		m := base
		parts := strings.Split(kv[i].(string), ".")
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = kv[i+1]
	}
	return base
}

// fakeClients answers the chart's lookup from objects held in memory, as
// the cluster of an upgrade would.
type fakeClients struct{ client dynamic.Interface }

func (f fakeClients) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, false, err
	}
	resource := strings.ToLower(kind) + "s"
	return f.client.Resource(gv.WithResource(resource)), true, nil
}

// render renders the chart as `helm template` would, values checked against
// values.schema.json, lookups answered from existing.
func render(vals map[string]any, existing ...runtime.Object) (map[string]string, error) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return nil, err
	}
	rv, err := chartutil.ToRenderValues(chrt, vals, chartutil.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: len(existing) == 0, IsUpgrade: len(existing) > 0}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	client := dynamicfake.NewSimpleDynamicClient(scheme.Scheme, existing...)
	return engine.RenderWithClientProvider(chrt, rv, fakeClients{client})
}

// objects are the rendered objects, each decoded strictly into its
// k8s.io/api type.
type objects struct {
	deployment  *appsv1.Deployment
	service     *corev1.Service
	configMap   *corev1.ConfigMap // the configuration file's
	dashboard   *corev1.ConfigMap // the Grafana dashboard's
	secrets     map[string]*corev1.Secret
	account     *corev1.ServiceAccount
	pdb         *policyv1.PodDisruptionBudget
	hpa         *autoscalingv2.HorizontalPodAutoscaler
	monitor     *serviceMonitor
	rule        *prometheusRule
	notes       string
	kinds       []string
	labelsOfAll []map[string]string
}

// mustRender renders vals and decodes every object strictly: an unknown or
// duplicate field, or a kind the test does not know, fails the test.
func mustRender(t *testing.T, vals map[string]any, existing ...runtime.Object) objects {
	t.Helper()
	out, err := render(vals, existing...)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	o := objects{secrets: map[string]*corev1.Secret{}}
	for _, file := range slices.Sorted(maps.Keys(out)) {
		if strings.HasSuffix(file, "NOTES.txt") {
			o.notes = out[file]
			continue
		}
		if err := o.addAll(out[file]); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	return o
}

// addAll adds the objects of a manifest of one or more documents.
func (o *objects) addAll(manifest string) error {
	for doc := range strings.SplitSeq(manifest, "\n---") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		if err := o.add([]byte(doc)); err != nil {
			return fmt.Errorf("%v\n%s", err, doc)
		}
	}
	return nil
}

func (o *objects) add(doc []byte) error {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return err
	}
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return nil // only comments
	}
	var into any
	switch tm.APIVersion + " " + tm.Kind {
	case "apps/v1 Deployment":
		o.deployment = &appsv1.Deployment{}
		into = o.deployment
	case "v1 Service":
		o.service = &corev1.Service{}
		into = o.service
	case "v1 ConfigMap":
		cm := &corev1.ConfigMap{}
		defer func() {
			if _, ok := cm.Data["jetgate.json"]; ok {
				o.dashboard = cm
			} else {
				o.configMap = cm
			}
		}()
		into = cm
	case "v1 Secret":
		s := &corev1.Secret{}
		defer func() { o.secrets[s.Name] = s }()
		into = s
	case "v1 ServiceAccount":
		o.account = &corev1.ServiceAccount{}
		into = o.account
	case "policy/v1 PodDisruptionBudget":
		o.pdb = &policyv1.PodDisruptionBudget{}
		into = o.pdb
	case "autoscaling/v2 HorizontalPodAutoscaler":
		o.hpa = &autoscalingv2.HorizontalPodAutoscaler{}
		into = o.hpa
	case "monitoring.coreos.com/v1 ServiceMonitor":
		o.monitor = &serviceMonitor{}
		into = o.monitor
	case "monitoring.coreos.com/v1 PrometheusRule":
		o.rule = &prometheusRule{}
		into = o.rule
	default:
		return fmt.Errorf("unexpected object %s %s", tm.APIVersion, tm.Kind)
	}
	strict, err := sigsjson.UnmarshalStrict(js, into)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		return fmt.Errorf("strict decoding: %v", strict)
	}
	o.kinds = append(o.kinds, tm.Kind)
	var meta struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	_ = json.Unmarshal(js, &meta)
	o.labelsOfAll = append(o.labelsOfAll, meta.Metadata.Labels)
	return nil
}

// serviceMonitor is the part of the Prometheus operator's ServiceMonitor
// the chart writes; decoding into it strictly catches a misspelt field.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path"`
			Interval      string `json:"interval"`
			Scheme        string `json:"scheme"`
			Authorization *struct {
				Type        string                   `json:"type"`
				Credentials corev1.SecretKeySelector `json:"credentials"`
			} `json:"authorization,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// prometheusRule is the Prometheus operator's PrometheusRule as the chart
// writes it; its spec is a rules file's content.
type prometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              ruleFile `json:"spec"`
}

// ruleFile is a Prometheus rules file: groups of alerting rules.
type ruleFile struct {
	Groups []struct {
		Name  string      `json:"name" yaml:"name"`
		Rules []alertRule `json:"rules" yaml:"rules"`
	} `json:"groups" yaml:"groups"`
}

type alertRule struct {
	Alert       string            `json:"alert" yaml:"alert"`
	Expr        string            `json:"expr" yaml:"expr"`
	For         string            `json:"for,omitempty" yaml:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty" yaml:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty" yaml:"annotations,omitempty"`
}
