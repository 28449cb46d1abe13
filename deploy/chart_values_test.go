package deploy

import (
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// tokenKeyLines are the key lines of a key file (README "Rotating the token
// key"): blank and # lines skipped.
func tokenKeyLines(file string) []string {
	var keys []string
	for line := range strings.Lines(file) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			keys = append(keys, line)
		}
	}
	return keys
}

// The chart makes the token key once: on an upgrade, lookup finds the
// Secret and the same key is rendered again; only a first install makes a
// new one. The Secret outlives an uninstall (resource-policy keep).
func TestTokenKeyMadeOnceAndKept(t *testing.T) {
	first := mustRender(t, baseValues())
	s := first.secrets[fullname+"-token-key"]
	if s == nil {
		t.Fatal("no token key Secret")
	}
	if s.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Errorf("annotations %v; want helm.sh/resource-policy: keep", s.Annotations)
	}
	key := s.Data["token.key"]
	if keys := tokenKeyLines(string(key)); len(keys) != 1 || len(keys[0]) < 32 {
		t.Fatalf("token.key %q: want one key of at least 32 bytes", key)
	}
	if again := mustRender(t, baseValues()).secrets[fullname+"-token-key"].Data["token.key"]; string(again) == string(key) {
		t.Fatal("two fresh installs made the same key: the key is not random")
	}
	existing := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: fullname + "-token-key", Namespace: namespace},
		Data:       map[string][]byte{"token.key": key},
	}
	upgraded := mustRender(t, baseValues(), existing)
	if got := upgraded.secrets[fullname+"-token-key"].Data["token.key"]; string(got) != string(key) {
		t.Errorf("upgrade rendered token.key %q; want the existing %q", got, key)
	}
	vol := volume(upgraded.deployment.Spec.Template.Spec, "token-key")
	if vol == nil || vol.Secret == nil || vol.Secret.SecretName != fullname+"-token-key" {
		t.Errorf("token key volume %+v", vol)
	}
}

func volume(pod corev1.PodSpec, name string) *corev1.Volume {
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == name {
			return &pod.Volumes[i]
		}
	}
	return nil
}

// With tokenKey.existingSecret the chart makes no key and mounts the user's.
func TestExistingTokenKeySecret(t *testing.T) {
	o := mustRender(t, with(baseValues(), "tokenKey.existingSecret", "shared-key"))
	if _, ok := o.secrets[fullname+"-token-key"]; ok {
		t.Error("the chart made a token key beside the user's")
	}
	vol := volume(o.deployment.Spec.Template.Spec, "token-key")
	if vol == nil || vol.Secret.SecretName != "shared-key" || len(vol.Secret.Items) != 1 || vol.Secret.Items[0].Key != "token.key" {
		t.Errorf("token key volume %+v", vol)
	}
	if c := o.deployment.Spec.Template.Spec.Containers[0]; !slices.Contains(c.Args, "--token-key-file=/etc/jetgate/token/token.key") {
		t.Errorf("args %v", c.Args)
	}
}

// NATS credentials and TLS come from Secrets, mounted read-only and named by
// jetgate's flags; a URL Secret of the user's replaces the chart's.
func TestNATSFromSecrets(t *testing.T) {
	o := mustRender(t, with(baseValues(), "nats.urlSecret", "nats-url", "nats.credsSecret", "nats-user",
		"nats.tls.secret", "nats-client-tls", "nats.tls.clientCert", true))
	if _, ok := o.secrets[fullname+"-nats-url"]; ok {
		t.Error("the chart made a URL Secret beside the user's")
	}
	pod := o.deployment.Spec.Template.Spec
	c := pod.Containers[0]
	checkNATSURL(t, o, c, "nats-url", "")
	for _, arg := range []string{"--nats-creds=/etc/jetgate/nats-creds/nats.creds", "--nats-tls-ca=/etc/jetgate/nats-tls/ca.crt",
		"--nats-tls-cert=/etc/jetgate/nats-tls/tls.crt", "--nats-tls-key=/etc/jetgate/nats-tls/tls.key"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("args %v lack %s", c.Args, arg)
		}
	}
	if v := volume(pod, "nats-creds"); v == nil || v.Secret.SecretName != "nats-user" {
		t.Errorf("creds volume %+v", v)
	}
	if v := volume(pod, "nats-tls"); v == nil || v.Secret.SecretName != "nats-client-tls" {
		t.Errorf("tls volume %+v", v)
	}
	checkMounts(t, pod, c)

	plain := mustRender(t, with(baseValues(), "nats.tls.secret", "nats-ca"))
	for _, a := range plain.deployment.Spec.Template.Spec.Containers[0].Args {
		if strings.HasPrefix(a, "--nats-tls-cert") || strings.HasPrefix(a, "--nats-creds") {
			t.Errorf("arg %s without its value set", a)
		}
	}
}

// Autoscaling adds an HPA on the Deployment, which then leaves replicas to it.
func TestAutoscaling(t *testing.T) {
	o := mustRender(t, with(baseValues(), "autoscaling.enabled", true, "autoscaling.maxReplicas", 6))
	if o.hpa == nil {
		t.Fatal("no HorizontalPodAutoscaler")
	}
	if o.deployment.Spec.Replicas != nil {
		t.Errorf("replicas %d set beside the autoscaler", *o.deployment.Spec.Replicas)
	}
	h := o.hpa.Spec
	if h.ScaleTargetRef.Kind != "Deployment" || h.ScaleTargetRef.Name != o.deployment.Name || *h.MinReplicas != 2 || h.MaxReplicas != 6 ||
		len(h.Metrics) != 1 || *h.Metrics[0].Resource.Target.AverageUtilization != 70 {
		t.Errorf("autoscaler %+v", h)
	}
	if none := mustRender(t, baseValues()); none.hpa != nil || none.monitor != nil {
		t.Error("autoscaler or ServiceMonitor rendered while off")
	}
}

// The ServiceMonitor scrapes /metrics on the Service's http port, with
// credentials when auth asks for them.
func TestServiceMonitor(t *testing.T) {
	o := mustRender(t, with(baseValues(), "serviceMonitor.enabled", true, "serviceMonitor.labels", map[string]any{"release": "prom"},
		"serviceMonitor.bearerTokenSecret", map[string]any{"name": "scraper", "key": "api-key"}))
	m := o.monitor
	if m == nil {
		t.Fatal("no ServiceMonitor")
	}
	if m.Labels["release"] != "prom" || len(m.Spec.Endpoints) != 1 {
		t.Fatalf("service monitor %+v", m)
	}
	for k, v := range m.Spec.Selector.MatchLabels {
		if o.service.Labels[k] != v {
			t.Errorf("selector %v does not pick the Service (labels %v)", m.Spec.Selector.MatchLabels, o.service.Labels)
		}
	}
	e := m.Spec.Endpoints[0]
	if e.Port != "http" || e.Path != "/metrics" || e.Scheme != "http" || e.Authorization == nil ||
		e.Authorization.Credentials.Name != "scraper" || e.Authorization.Credentials.Key != "api-key" {
		t.Errorf("endpoint %+v", e)
	}
}

// With TLS on the listeners the probes and the Service speak it.
func TestTLSListeners(t *testing.T) {
	o := mustRender(t, with(baseValues(), "config.listen", map[string]any{"tls": map[string]any{"cert": "/tls/tls.crt", "key": "/tls/tls.key"}},
		"extraVolumes", []any{map[string]any{"name": "tls", "secret": map[string]any{"secretName": "jetgate-tls"}}},
		"extraVolumeMounts", []any{map[string]any{"name": "tls", "mountPath": "/tls", "readOnly": true}}))
	c := o.deployment.Spec.Template.Spec.Containers[0]
	checkProbes(t, c, corev1.URISchemeHTTPS)
	checkMounts(t, o.deployment.Spec.Template.Spec, c)
	for _, p := range o.service.Spec.Ports {
		if p.AppProtocol != nil && (*p.AppProtocol == "kubernetes.io/h2c" || *p.AppProtocol == "http") {
			t.Errorf("port %s says %s over TLS", p.Name, *p.AppProtocol)
		}
	}
}

// A misspelt value, or one of the wrong type, fails to render, naming it.
func TestSchemaRefusesMisspeltValues(t *testing.T) {
	for _, tc := range []struct {
		vals map[string]any
		want string
	}{
		{with(baseValues(), "replicaCont", 3), "replicaCont"},
		{with(baseValues(), "image.tagg", "1.0"), "tagg"},
		{with(baseValues(), "nats.credSecret", "x"), "credSecret"},
		{with(baseValues(), "tokenKey.existingsecret", "x"), "existingsecret"},
		{with(baseValues(), "autoscaling.enable", true), "enable"},
		{with(baseValues(), "serviceMonitor.enabeld", true), "enabeld"},
		{with(baseValues(), "config.consumer", []any{}), "consumer"},
		{with(baseValues(), "replicaCount", "two"), "replicaCount"},
		{with(baseValues(), "terminationGracePeriodSeconds", 5), "terminationGracePeriodSeconds"},
	} {
		_, err := render(tc.vals)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: render error %v; want one naming it", tc.want, err)
		}
	}
}

// What jetgate would refuse to start with, the chart refuses to render.
func TestChartRefusesWhatJetgateWould(t *testing.T) {
	for _, tc := range []struct {
		name string
		vals map[string]any
		want string
	}{
		{"the defaults: no auth", map[string]any{}, "config.auth"},
		{"no consumer", with(baseValues(), "config.consumers", []any{}), "config.consumers"},
		{"no NATS", with(baseValues(), "nats.url", ""), "nats.url"},
		{"mtls without a client CA", with(baseValues(), "config.auth", map[string]any{"mtls": true},
			"config.listen", map[string]any{"tls": map[string]any{"cert": "/tls/tls.crt", "key": "/tls/tls.key"}}), "config.listen.tls.client_ca"},
		{"on_demand with no match", with(baseValues(), "config.consumers", []any{}, "config.on_demand", map[string]any{"idle_unbind": "10m"}), "config.consumers"},
		{"admin with no streams", with(baseValues(), "config.consumers", []any{}, "config.admin", map[string]any{"max_ack_wait": "1m"}), "config.consumers"},
	} {
		_, err := render(tc.vals)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: render error %v; want one naming %s", tc.name, err, tc.want)
		}
	}
	open := mustRender(t, with(map[string]any{}, "config.auth", map[string]any{"allow_unauthenticated": true}))
	if !strings.Contains(open.notes, "WARNING") {
		t.Errorf("NOTES without a warning for an open gateway:\n%s", open.notes)
	}
}

// helm lint passes over the chart with values that configure auth.
func TestHelmLint(t *testing.T) {
	for _, vals := range []map[string]any{baseValues(), with(baseValues(), "autoscaling.enabled", true, "serviceMonitor.enabled", true,
		"prometheusRule.enabled", true, "grafanaDashboard.enabled", true)} {
		res := action.NewLint().Run([]string{chartDir}, vals)
		for _, m := range res.Messages {
			t.Logf("lint: %s", m)
		}
		if len(res.Errors) > 0 {
			t.Errorf("helm lint: %v", res.Errors)
		}
	}
}

// Each Secret has one purpose: the chart makes the NATS URL's and the token
// key's, the user every other, and the chart refuses a Secret of the user's
// by the name of one it makes (the README's credentials Secret and the
// chart's URL Secret once shared a name, and the creds mount read the URL).
func TestSecretsOnePerPurpose(t *testing.T) {
	o := mustRender(t, with(baseValues(), "nats.credsSecret", "shop-nats"))
	if got, want := slices.Sorted(maps.Keys(o.secrets)), []string{fullname + "-nats-url", fullname + "-token-key"}; !slices.Equal(got, want) {
		t.Errorf("the chart makes Secrets %v; want %v", got, want)
	}
	if v := volume(o.deployment.Spec.Template.Spec, "nats-creds"); v == nil || v.Secret.SecretName != "shop-nats" {
		t.Errorf("creds volume %+v; want the user's Secret", v)
	}
	for _, tc := range []struct{ value, name string }{
		{"nats.credsSecret", fullname + "-nats-url"},
		{"nats.credsSecret", fullname + "-token-key"},
		{"nats.tls.secret", fullname + "-nats-url"},
		{"nats.urlSecret", fullname + "-token-key"},
		{"tokenKey.existingSecret", fullname + "-nats-url"},
	} {
		_, err := render(with(baseValues(), tc.value, tc.name))
		if err == nil || !strings.Contains(err.Error(), tc.value) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s %s: render error %v; want one naming both", tc.value, tc.name, err)
		}
	}
	// A name the chart does not make is the user's to take.
	mustRender(t, with(baseValues(), "nats.urlSecret", fullname+"-nats-url", "tokenKey.existingSecret", fullname+"-token-key"))
}

// The schema takes exactly the top-level keys of jetgate's configuration
// file (internal/config Config), and a configuration of consumers on
// demand alone, or of consumers through the API alone, renders.
func TestSchemaKnowsEveryConfigKey(t *testing.T) {
	src, err := os.ReadFile("../internal/config/config.go")
	if err != nil {
		t.Fatal(err)
	}
	body := regexp.MustCompile(`(?s)\ntype Config struct \{(.*?)\n\}`).FindSubmatch(src)
	if body == nil {
		t.Fatal("internal/config/config.go: no type Config")
	}
	var want []string
	for _, m := range regexp.MustCompile(`yaml:"(\w+)[,"]`).FindAllSubmatch(body[1], -1) {
		want = append(want, string(m[1]))
	}
	b, err := os.ReadFile(chartDir + "/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Config struct {
				Properties map[string]any `json:"properties"`
			} `json:"config"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(schema.Properties.Config.Properties)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("the schema's config keys %v; jetgate's %v", got, slices.Sorted(slices.Values(want)))
	}
	mustRender(t, with(baseValues(), "config.consumers", nil, "config.on_demand", map[string]any{"match": []any{map[string]any{"stream": "*", "consumer": "*"}}}))
	mustRender(t, with(baseValues(), "config.consumers", nil, "config.admin", map[string]any{"streams": []any{"ORDERS"}, "consumers": []any{"team-*"}}))
}
