package deploy

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

func selector() map[string]string {
	return map[string]string{"app.kubernetes.io/name": "jetgate", "app.kubernetes.io/instance": release}
}

// The objects of the default install, and what a reviewer of production
// Kubernetes looks for in each.
func TestChartDefaults(t *testing.T) {
	o := mustRender(t, baseValues())
	want := []string{"ConfigMap", "Deployment", "PodDisruptionBudget", "Secret", "Secret", "Service", "ServiceAccount"}
	if got := slices.Sorted(slices.Values(o.kinds)); !slices.Equal(got, want) {
		t.Fatalf("objects %v; want %v", got, want)
	}
	for i, l := range o.labelsOfAll {
		if !labels.SelectorFromSet(selector()).Matches(labels.Set(l)) || l["app.kubernetes.io/managed-by"] != "Helm" {
			t.Errorf("object %s has labels %v", o.kinds[i], l)
		}
	}
	d := o.deployment
	if d.Name != fullname || d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("deployment %s with replicas %v; want %s with 2", d.Name, d.Spec.Replicas, fullname)
	}
	if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable.IntValue() != 0 {
		t.Errorf("rolling update %+v; want maxUnavailable 0, so that a rollout waits for /readyz", ru)
	}
	pod := d.Spec.Template
	if !reflect.DeepEqual(d.Spec.Selector.MatchLabels, selector()) || !labels.SelectorFromSet(selector()).Matches(labels.Set(pod.Labels)) {
		t.Errorf("selector %v, pod labels %v", d.Spec.Selector.MatchLabels, pod.Labels)
	}
	if pod.Annotations["checksum/config"] == "" {
		t.Error("no checksum/config annotation: a changed configuration would not roll the pods")
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers; want 1", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	if c.Image != "jetgate:0.1.0" {
		t.Errorf("image %q; want the appVersion's", c.Image)
	}
	checkSecurity(t, pod.Spec, c)
	checkProbes(t, c, corev1.URISchemeHTTP)
	checkPorts(t, c, o)
	checkGrace(t, pod.Spec, c)
	checkSpread(t, pod.Spec)
	checkMounts(t, pod.Spec, c)
	wantRes := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
	}
	if !equality.Semantic.DeepEqual(c.Resources, wantRes) {
		t.Errorf("resources %v; want %v", c.Resources, wantRes)
	}
	if o.account.AutomountServiceAccountToken == nil || *o.account.AutomountServiceAccountToken ||
		pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken || pod.Spec.ServiceAccountName != o.account.Name {
		t.Error("the pod gets a service account token it never uses")
	}
	if p := o.pdb.Spec; p.MaxUnavailable == nil || p.MaxUnavailable.IntValue() != 1 || !reflect.DeepEqual(p.Selector.MatchLabels, selector()) {
		t.Errorf("pod disruption budget %+v", p)
	}
	checkNATSURL(t, o, c, fullname+"-nats-url", "nats://nats:4222")
}

func checkSecurity(t *testing.T, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	ps := pod.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser != 65532 ||
		ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v; want non-root 65532, seccomp RuntimeDefault", ps)
	}
	s := c.SecurityContext
	if s == nil || s.ReadOnlyRootFilesystem == nil || !*s.ReadOnlyRootFilesystem || s.AllowPrivilegeEscalation == nil || *s.AllowPrivilegeEscalation ||
		s.RunAsNonRoot == nil || !*s.RunAsNonRoot || s.Capabilities == nil || !slices.Equal(s.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(s.Capabilities.Add) != 0 ||
		s.SeccompProfile == nil || s.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("container security context %+v", s)
	}
}

func checkProbes(t *testing.T, c corev1.Container, scheme corev1.URIScheme) {
	t.Helper()
	for _, p := range []struct {
		probe *corev1.Probe
		path  string
	}{{c.LivenessProbe, "/healthz"}, {c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("no HTTP probe on %s", p.path)
			continue
		}
		if g := p.probe.HTTPGet; g.Path != p.path || g.Port.String() != "http" || g.Scheme != scheme {
			t.Errorf("probe %+v; want %s on port http, %s", g, p.path, scheme)
		}
	}
}

func checkPorts(t *testing.T, c corev1.Container, o objects) {
	t.Helper()
	container := map[string]int32{}
	for _, p := range c.Ports {
		container[p.Name] = p.ContainerPort
	}
	if !reflect.DeepEqual(container, map[string]int32{"grpc": 9090, "http": 8080}) {
		t.Errorf("container ports %v", container)
	}
	if !slices.Contains(c.Args, "--grpc-addr=:9090") || !slices.Contains(c.Args, "--http-addr=:8080") {
		t.Errorf("args %v do not listen on the container ports", c.Args)
	}
	s := o.service
	if s.Spec.Type != corev1.ServiceTypeClusterIP || !reflect.DeepEqual(s.Spec.Selector, selector()) || len(s.Spec.Ports) != 2 {
		t.Fatalf("service %+v", s.Spec)
	}
	for _, p := range s.Spec.Ports {
		if _, ok := container[p.TargetPort.String()]; !ok || p.Name != p.TargetPort.String() {
			t.Errorf("service port %s targets %s", p.Name, p.TargetPort.String())
		}
	}
	if app := s.Spec.Ports[0].AppProtocol; s.Spec.Ports[0].Name != "grpc" || app == nil || *app != "kubernetes.io/h2c" {
		t.Errorf("gRPC port %+v; want appProtocol kubernetes.io/h2c", s.Spec.Ports[0])
	}
	if app := s.Spec.Ports[1].AppProtocol; s.Spec.Ports[1].Name != "http" || app == nil || *app != "http" {
		t.Errorf("HTTP port %+v; want appProtocol http", s.Spec.Ports[1])
	}
}

// jetgateShutdown is jetgate's own shutdown: the grace callers get
// (app.Defaults) plus the replica's close, bounded by its request timeout.
func jetgateShutdown(t *testing.T) time.Duration {
	t.Helper()
	grace := durationIn(t, "../app/*.go", `ShutdownGrace:\s+(\d+) \* time\.Second`)
	closing := durationIn(t, "../internal/consumer/defaults.go", `DefaultRequestTimeout\s+= (\d+) \* time\.Second`)
	return grace + 2*closing // the replica's close: a request timeout for the work in flight, another for its last naks
}

// durationIn finds a duration in seconds in the gateway's source, by re.
func durationIn(t *testing.T, glob, re string) time.Duration {
	t.Helper()
	files, _ := filepath.Glob(glob)
	var m [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m = regexp.MustCompile(re).FindSubmatch(b); m != nil {
			break
		}
	}
	if m == nil {
		t.Fatalf("%s: no match for %s: the chart's grace must be checked against it again", glob, re)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return time.Duration(n) * time.Second
}

func checkGrace(t *testing.T, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	var preStop time.Duration
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
		t.Error("no preStop pause: the endpoints may still send to a stopping pod")
	} else {
		preStop = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	}
	own := jetgateShutdown(t)
	if g := pod.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= preStop+own {
		t.Errorf("terminationGracePeriodSeconds %v; want more than preStop %v + jetgate's own %v", g, preStop, own)
	}
}

func checkSpread(t *testing.T, pod corev1.PodSpec) {
	t.Helper()
	keys := map[string]bool{}
	for _, s := range pod.TopologySpreadConstraints {
		if s.LabelSelector == nil || !reflect.DeepEqual(s.LabelSelector.MatchLabels, selector()) || s.MaxSkew != 1 {
			t.Errorf("spread %+v", s)
		}
		keys[s.TopologyKey] = true
	}
	if !keys["topology.kubernetes.io/zone"] || !keys["kubernetes.io/hostname"] {
		t.Errorf("spread over %v; want zones and nodes", slices.Collect(maps.Keys(keys)))
	}
}

// checkMounts: every mount has its volume, and /tmp is the only writable
// one.
func checkMounts(t *testing.T, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	for _, m := range c.VolumeMounts {
		if _, ok := vols[m.Name]; !ok {
			t.Errorf("mount %s has no volume", m.Name)
		}
		if !m.ReadOnly && m.MountPath != "/tmp" {
			t.Errorf("mount %s at %s is writable", m.Name, m.MountPath)
		}
	}
}

func checkNATSURL(t *testing.T, o objects, c corev1.Container, secret, url string) {
	t.Helper()
	var ref *corev1.SecretKeySelector
	for _, e := range c.Env {
		if e.Name == "JETGATE_NATS_URL" && e.ValueFrom != nil {
			ref = e.ValueFrom.SecretKeyRef
		}
		if e.Name == "JETGATE_NATS_URL" && e.Value != "" {
			t.Error("the NATS URL (it may hold a password) is in the pod spec")
		}
	}
	if ref == nil || ref.Name != secret || ref.Key != "url" {
		t.Fatalf("JETGATE_NATS_URL from %+v; want Secret %s key url", ref, secret)
	}
	if s, ok := o.secrets[secret]; url != "" && (!ok || s.StringData["url"] != url) {
		t.Errorf("secret %s holds %v; want url %s", secret, s, url)
	}
}

// The ConfigMap holds the config value as jetgate's --config file, exactly.
func TestConfigMapIsTheConfigFile(t *testing.T) {
	vals := baseValues()
	o := mustRender(t, vals)
	var file map[string]any
	if err := yaml.Unmarshal([]byte(o.configMap.Data["jetgate.yaml"]), &file); err != nil {
		t.Fatal(err)
	}
	want, _ := yaml.Marshal(vals["config"])
	var wantMap map[string]any
	_ = yaml.Unmarshal(want, &wantMap)
	if !reflect.DeepEqual(file, wantMap) {
		t.Errorf("jetgate.yaml\n%s\nwant\n%s", o.configMap.Data["jetgate.yaml"], want)
	}
	c := o.deployment.Spec.Template.Spec.Containers[0]
	if !slices.Contains(c.Args, "--config=/etc/jetgate/config/jetgate.yaml") {
		t.Errorf("args %v", c.Args)
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		mounted = mounted || (m.Name == "config" && m.MountPath == "/etc/jetgate/config")
	}
	if !mounted {
		t.Error("the ConfigMap is not mounted where --config reads it")
	}
}
