package deploy

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// Changing nats.url rolls the pods: the URL reaches them through the
// environment, read at start from a Secret, and the pod template's
// checksum covered config alone, so `helm upgrade --set nats.url=…` changed
// the Secret and no pod restarted to read it.
func TestChangingTheNATSURLRollsThePods(t *testing.T) {
	a := mustRender(t, with(baseValues(), "nats.url", "nats://old:4222"))
	b := mustRender(t, with(baseValues(), "nats.url", "nats://new-nats.other:4222"))
	if reflect.DeepEqual(a.deployment.Spec.Template, b.deployment.Spec.Template) {
		t.Error("changing nats.url leaves the pod template as it was: the Deployment does not roll")
	}
	// A password is not hashed where anyone who reads pods can test guesses.
	c := mustRender(t, with(baseValues(), "nats.url", "nats://jetgate:s3cret@old:4222"))
	if c.deployment.Spec.Template.Annotations["checksum/nats-url"] != a.deployment.Spec.Template.Annotations["checksum/nats-url"] {
		t.Error("the pods' annotation hashes the URL's credentials")
	}
}

// extraEnv reaches the container, after the NATS URL: GOMEMLIMIT, which the
// README advises a margin below the memory limit, and tracing's OTEL_*
// variables had no way in. The URL's own variable is jetgate's alone.
func TestExtraEnvReachesTheContainer(t *testing.T) {
	env := []any{
		map[string]any{"name": "GOMEMLIMIT", "value": "460MiB"},
		map[string]any{"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": "http://collector:4318"},
	}
	o := mustRender(t, with(baseValues(), "extraEnv", env))
	got := map[string]string{}
	for _, e := range o.deployment.Spec.Template.Spec.Containers[0].Env {
		got[e.Name] = e.Value
	}
	if got["GOMEMLIMIT"] != "460MiB" || got["OTEL_EXPORTER_OTLP_ENDPOINT"] != "http://collector:4318" {
		t.Errorf("container env %v; want extraEnv's", got)
	}
	if _, err := render(with(baseValues(), "extraEnv", []any{map[string]any{"name": "JETGATE_NATS_URL", "value": "nats://elsewhere:4222"}})); err == nil {
		t.Error("extraEnv may set JETGATE_NATS_URL, beside nats.url's")
	}
}

// A termination grace that leaves jetgate less than its own shutdown after
// the preStop pause is refused: the schema checked each alone, and a pause
// of 20s or 30s under the default grace of 30s had the pod killed in the
// middle of its shutdown (Fetches cut without a nak).
func TestAGraceShorterThanThePauseAndTheShutdownIsRefused(t *testing.T) {
	own := jetgateShutdown(t)
	for _, pre := range []int{5, 15, 20, 30} {
		o, err := render(with(baseValues(), "preStopSleepSeconds", pre))
		fits := time.Duration(30-pre)*time.Second > own // the default grace, 30s
		switch {
		case fits && err != nil:
			t.Errorf("preStopSleepSeconds %d refused under a grace of 30s: %v", pre, err)
		case !fits && err == nil:
			t.Errorf("preStopSleepSeconds %d rendered under a grace of 30s (%d objects): jetgate's %v shutdown is cut", pre, len(o), own)
		case !fits && !strings.Contains(err.Error(), "terminationGracePeriodSeconds"):
			t.Errorf("preStopSleepSeconds %d: %v; want the grace named", pre, err)
		}
	}
}

// The Dockerfile stamps the version into the binary it builds, as
// scripts/image does (DESIGN section 15): its build had no -X, and ARG
// VERSION was declared in the final stage alone, so every Docker-built
// jetgate said version "devel".
func TestTheDockerfileStampsTheVersion(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repo, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	build, _, _ := strings.Cut(string(b), "FROM scratch")
	if !strings.Contains(build, "ARG VERSION") || !strings.Contains(build, "${VERSION:+-X github.com/jetgate/jetgate/app.version=${VERSION}}") {
		t.Errorf("the Dockerfile's build stage does not stamp app.version from ARG VERSION:\n%s", build)
	}
}

// With TLS on the listeners, the ServiceMonitor takes a tlsConfig (the CA
// and server name Prometheus verifies jetgate's certificate by): it said
// https alone, Prometheus verified a cluster certificate against its system
// roots and a pod IP, every scrape failed and JetgateDown fired.
func TestTheServiceMonitorTakesATLSConfig(t *testing.T) {
	tlsConfig := map[string]any{"ca": map[string]any{"secret": map[string]any{"name": "jetgate-ca", "key": "ca.crt"}}, "serverName": "jetgate.jetgate.svc"}
	vals := with(baseValues(), "config.listen", map[string]any{"tls": map[string]any{"cert": "/tls/tls.crt", "key": "/tls/tls.key"}},
		"extraVolumes", []any{map[string]any{"name": "tls", "secret": map[string]any{"secretName": "jetgate-tls"}}},
		"extraVolumeMounts", []any{map[string]any{"name": "tls", "mountPath": "/tls", "readOnly": true}},
		"serviceMonitor.enabled", true, "serviceMonitor.tlsConfig", tlsConfig)
	out, err := render(vals)
	if err != nil {
		t.Fatal(err)
	}
	var sm map[string]any
	if err := yaml.Unmarshal([]byte(out["jetgate/templates/servicemonitor.yaml"]), &sm); err != nil {
		t.Fatal(err)
	}
	ep := sm["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)
	if ep["scheme"] != "https" || !reflect.DeepEqual(ep["tlsConfig"], tlsConfig) {
		t.Errorf("ServiceMonitor endpoint %v; want https with the tlsConfig given", ep)
	}
}
