package deploy

import (
	"bytes"
	"flag"
	"log/slog"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite "+plainRulesFile+" from the chart's PrometheusRule")

// wantAlerts are the alerts deploy/README.md "Alerts" describes, in order.
var wantAlerts = []string{"JetgateBacklogGrowing", "JetgateOldestUnackedTooOld", "JetgateDeadLetters", "JetgatePushEndpointHeldBack",
	"JetgateTokenKeyMismatch", "JetgateNATSUnavailable", "JetgateReplicasMissing", "JetgateDown"}

// The dashboard is one Grafana lays out: panels with ids of their own,
// within the 24 columns and on top of none other, each with a description
// and queries of the dashboard's data source variable.
func TestDashboardShape(t *testing.T) {
	d := readDashboard(t)
	if d.UID != "jetgate" || d.Title != "jetgate" {
		t.Errorf("uid %q, title %q; want jetgate", d.UID, d.Title)
	}
	if l := d.Templating.List; len(l) == 0 || l[0].Name != "datasource" || l[0].Type != "datasource" {
		t.Error("the first variable is not the data source")
	}
	ids := map[int]bool{}
	cells := map[[2]int]string{}
	for _, p := range d.allPanels() {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		g := p.GridPos
		if g.W < 1 || g.H < 1 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q at %+v: outside the grid", p.Title, g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := cells[[2]int{x, y}]; ok {
					t.Fatalf("panel %q lies on %q at %d,%d", p.Title, other, x, y)
				}
				cells[[2]int{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		if p.Title == "" || p.Description == "" || len(p.Targets) == 0 {
			t.Errorf("panel %d %q: no title, description or query", p.ID, p.Title)
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: data source %+v; want the variable ${datasource}", p.Title, p.Datasource)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if refs[tg.RefID] || tg.RefID == "" {
				t.Errorf("panel %q: refId %q twice or empty", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
		}
	}
}

// The chart installs the dashboard as a ConfigMap for Grafana's sidecar,
// when asked to.
func TestDashboardConfigMap(t *testing.T) {
	if mustRender(t, baseValues()).dashboard != nil {
		t.Error("dashboard ConfigMap rendered while off")
	}
	o := mustRender(t, with(baseValues(), "grafanaDashboard.enabled", true, "grafanaDashboard.annotations", map[string]any{"grafana_folder": "queues"}))
	cm := o.dashboard
	if cm == nil {
		t.Fatal("no dashboard ConfigMap")
	}
	if cm.Name != fullname+"-dashboard" || cm.Namespace != "" || cm.Labels["grafana_dashboard"] != "1" || cm.Annotations["grafana_folder"] != "queues" {
		t.Errorf("dashboard ConfigMap %s/%s, labels %v, annotations %v", cm.Namespace, cm.Name, cm.Labels, cm.Annotations)
	}
	file, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := cm.Data["jetgate.json"]; strings.TrimSpace(got) != strings.TrimSpace(string(file)) {
		t.Errorf("jetgate.json in the ConfigMap (%d bytes) is not %s (%d bytes)", len(got), dashboardFile, len(file))
	}
	if o.configMap == nil || o.configMap.Data["jetgate.yaml"] == "" {
		t.Error("the configuration file's ConfigMap is gone")
	}
	other := mustRender(t, with(baseValues(), "grafanaDashboard.enabled", true, "grafanaDashboard.namespace", "monitoring",
		"grafanaDashboard.labels", map[string]any{"dashboards": "queues"}))
	if cm := other.dashboard; cm.Namespace != "monitoring" || cm.Labels["dashboards"] != "queues" {
		t.Errorf("dashboard ConfigMap in %q with labels %v; want monitoring, and the labels given", cm.Namespace, cm.Labels)
	}
}

// The chart renders the alerts as a PrometheusRule when asked to: each for
// this release's series, with a severity and words for whoever is paged,
// in a form Prometheus loads.
func TestPrometheusRule(t *testing.T) {
	if mustRender(t, baseValues()).rule != nil {
		t.Error("PrometheusRule rendered while off")
	}
	o := mustRender(t, with(baseValues(), "prometheusRule.enabled", true, "prometheusRule.labels", map[string]any{"release": "prom"},
		"prometheusRule.alertLabels", map[string]any{"team": "queues"}))
	r := o.rule
	if r.Name != fullname || r.Labels["release"] != "prom" {
		t.Errorf("PrometheusRule %s with labels %v", r.Name, r.Labels)
	}
	rules := r.Spec.rules()
	var names []string
	for _, r := range rules {
		names = append(names, r.Alert)
	}
	if !slices.Equal(names, wantAlerts) {
		t.Errorf("alerts %v; want %v", names, wantAlerts)
	}
	for _, rule := range rules {
		if s := rule.Labels["severity"]; s != "warning" && s != "critical" {
			t.Errorf("%s: severity %q", rule.Alert, s)
		}
		if rule.Labels["team"] != "queues" || rule.Annotations["summary"] == "" || rule.Annotations["description"] == "" {
			t.Errorf("%s: labels %v, annotations %v", rule.Alert, rule.Labels, rule.Annotations)
		}
		checkSelected(t, rule, map[string]string{"namespace": namespace, "job": fullname})
	}
	checkRulesLoad(t, r.Spec)

	for _, tc := range []struct {
		vals map[string]any
		rule string
		want string
	}{
		{baseValues(), "JetgateOldestUnackedTooOld", "> 600"},
		{with(baseValues(), "prometheusRule.oldestUnackedAgeSeconds", 120), "JetgateOldestUnackedTooOld", "> 120"},
		{baseValues(), "JetgateReplicasMissing", "< 2"},
		{with(baseValues(), "replicaCount", 4), "JetgateReplicasMissing", "< 4"},
		{with(baseValues(), "autoscaling.enabled", true, "autoscaling.minReplicas", 3), "JetgateReplicasMissing", "< 3"},
		{with(baseValues(), "prometheusRule.minReplicas", 5), "JetgateReplicasMissing", "< 5"},
	} {
		if expr := chartRules(t, tc.vals).rule(t, tc.rule).Expr; !strings.HasSuffix(strings.TrimSpace(expr), tc.want) {
			t.Errorf("%s: %q; want it to end %q", tc.rule, expr, tc.want)
		}
	}
	own := chartRules(t, with(baseValues(), "prometheusRule.selector", `cluster="eu", job="queues"`, "prometheusRule.alertLabels", map[string]any{"severity": "page"}))
	for _, rule := range own.rules() {
		checkSelected(t, rule, map[string]string{"cluster": "eu", "job": "queues"})
		if rule.Labels["severity"] != "page" {
			t.Errorf("%s: severity %q; alertLabels say page", rule.Alert, rule.Labels["severity"])
		}
	}
}

func (f ruleFile) rules() []alertRule {
	var out []alertRule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

func (f ruleFile) rule(t *testing.T, alert string) alertRule {
	t.Helper()
	for _, r := range f.rules() {
		if r.Alert == alert {
			return r
		}
	}
	t.Fatalf("no alert %s", alert)
	return alertRule{}
}

// checkSelected: every selector of the rule's expression has exactly the
// label matchers of want beside those of its own.
func checkSelected(t *testing.T, rule alertRule, want map[string]string) {
	t.Helper()
	e, err := parse(query{where: rule.Alert, expr: rule.Expr})
	if err != nil {
		t.Fatal(err)
	}
	for _, vs := range selectors(e) {
		got := map[string]string{}
		for _, m := range vs.LabelMatchers {
			if _, ok := want[m.Name]; ok {
				got[m.Name] = m.Value
			}
			if m.Name == "namespace" || m.Name == "job" {
				got[m.Name] = m.Value
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %s picks %v; want %v", rule.Alert, vs, got, want)
		}
	}
}

// checkRulesLoad loads the rules as Prometheus loads a rules file: fields,
// expressions, durations, label names and the annotations' templates.
func checkRulesLoad(t *testing.T, f ruleFile) {
	t.Helper()
	b, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if _, errs := rulefmt.Parse(b, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler)); len(errs) > 0 {
		t.Errorf("Prometheus would not load the rules: %v", errs)
	}
}

const plainRulesHeader = `# jetgate's alerts for a Prometheus without the operator: rule_files: [jetgate-rules.yaml].
# deploy/README.md "Alerts" says what each means and what to do. Every expression picks jetgate's
# series with job="jetgate", and JetgateReplicasMissing expects 2 replicas: edit both to your setup.
# Made from the chart's PrometheusRule (helm/jetgate/templates/prometheusrule.yaml), which a test
# keeps it equal to: go test -run TestPlainRulesAreTheCharts -update rewrites it.
`

// The plain rules file is the chart's PrometheusRule with job="jetgate" and
// 2 replicas, and Prometheus loads it.
func TestPlainRulesAreTheCharts(t *testing.T) {
	want := chartRules(t, with(baseValues(), "prometheusRule.selector", `job="jetgate"`, "prometheusRule.minReplicas", 2))
	if *update {
		var b bytes.Buffer
		b.WriteString(plainRulesHeader)
		enc := yamlv3.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(want); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(plainRulesFile, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := readPlainRules(t); !reflect.DeepEqual(got, want) {
		t.Errorf("%s is not the chart's PrometheusRule: go test -run TestPlainRulesAreTheCharts -update rewrites it", plainRulesFile)
	}
	if _, errs := rulefmt.ParseFile(plainRulesFile, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler)); len(errs) > 0 {
		t.Errorf("Prometheus would not load %s: %v", plainRulesFile, errs)
	}
}

var (
	readmePanel = regexp.MustCompile(`(?m)^\*\*([^*]+)\*\*$|^- \*([^*]+)\.\* `) // a row, or a panel
	readmeAlert = regexp.MustCompile("(?m)^\\| `(Jetgate\\w+)` \\|")
)

// README "Dashboard" describes every panel of the dashboard, row by row,
// and "Alerts" every alert, and nothing else.
func TestREADMEDescribesPanelsAndAlerts(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	dash, alerts, ok := strings.Cut(readme[strings.Index(readme, "\n### Dashboard\n")+1:], "\n### Alerts\n")
	if !ok || !strings.HasPrefix(dash, "### Dashboard") {
		t.Fatal("README.md has no Dashboard section followed by Alerts")
	}
	alerts, _, _ = strings.Cut(alerts, "\n## ")
	var want []string
	for _, p := range readDashboard(t).allPanels() {
		if p.Type == "row" {
			want = append(want, "row "+p.Title)
		} else {
			want = append(want, p.Title)
		}
	}
	var got []string
	for _, m := range readmePanel.FindAllStringSubmatch(dash, -1) {
		if m[1] != "" {
			got = append(got, "row "+m[1])
		} else {
			got = append(got, m[2])
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("README Dashboard describes\n%q\nthe dashboard has\n%q", got, want)
	}
	var names []string
	for _, m := range readmeAlert.FindAllStringSubmatch(alerts, -1) {
		names = append(names, m[1])
	}
	if !slices.Equal(names, wantAlerts) {
		t.Errorf("README Alerts describes %v; want %v", names, wantAlerts)
	}
}
