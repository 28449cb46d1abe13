package deploy

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

const (
	dashboardFile  = "helm/jetgate/dashboards/jetgate.json"
	plainRulesFile = "prometheus/jetgate-rules.yaml"
)

// query is a PromQL expression of the dashboard or of the alerts; label,
// if set, is a label the expression's metric must have (a dashboard
// variable's label_values).
type query struct {
	where string
	expr  string
	label string
}

// grafanaRanges stand for the range variables Grafana fills in; the other
// variables appear only inside label matchers' strings.
var grafanaRanges = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

var labelValues = regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`)

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID          int    `json:"id"`
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Datasource  *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, "dashboards", "jetgate.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// allPanels are the dashboard's panels, those in collapsed rows included.
func (d dashboard) allPanels() []panel {
	var out []panel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

// queries are the dashboard's expressions: each panel's targets, and each
// query variable's selector.
func (d dashboard) queries(t *testing.T) []query {
	t.Helper()
	var qs []query
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			qs = append(qs, query{where: fmt.Sprintf("dashboard panel %q %s", p.Title, tg.RefID), expr: tg.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: %v", v.Name, err)
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Fatalf("variable %s: %q is not label_values(selector, label)", v.Name, q.Query)
		}
		qs = append(qs, query{where: "dashboard variable " + v.Name, expr: m[1], label: m[2]})
	}
	return qs
}

// chartRules are the alerts of the chart's PrometheusRule rendered with vals
// (prometheusRule.enabled set).
func chartRules(t *testing.T, vals map[string]any) ruleFile {
	t.Helper()
	o := mustRender(t, with(vals, "prometheusRule.enabled", true))
	if o.rule == nil {
		t.Fatal("no PrometheusRule")
	}
	return o.rule.Spec
}

func readPlainRules(t *testing.T) ruleFile {
	t.Helper()
	b, err := os.ReadFile(plainRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		t.Fatalf("%s: %v", plainRulesFile, err)
	}
	return f
}

func (f ruleFile) queries(where string) []query {
	var qs []query
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			qs = append(qs, query{where: where + " " + r.Alert, expr: r.Expr})
		}
	}
	return qs
}

// allQueries are every expression deploy/ ships.
func allQueries(t *testing.T) []query {
	t.Helper()
	qs := readDashboard(t).queries(t)
	qs = append(qs, chartRules(t, baseValues()).queries("chart alert")...)
	return append(qs, readPlainRules(t).queries(plainRulesFile)...)
}

var promql = parser.NewParser(parser.Options{})

func parse(q query) (parser.Expr, error) {
	e, err := promql.ParseExpr(grafanaRanges.Replace(q.expr))
	if err != nil {
		return nil, fmt.Errorf("%s: %q: %w", q.where, q.expr, err)
	}
	return e, nil
}

// Every expression of the dashboard and the alerts is PromQL that
// Prometheus's own parser takes, and selects its series by metric name.
func TestPromQLParses(t *testing.T) {
	qs := allQueries(t)
	if len(qs) < 40 {
		t.Fatalf("%d expressions found; the dashboard and alerts have more", len(qs))
	}
	for _, q := range qs {
		e, err := parse(q)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, vs := range selectors(e) {
			if metricName(vs) == "" {
				t.Errorf("%s: %s selects no metric by name", q.where, vs)
			}
		}
	}
}

func selectors(e parser.Node) []*parser.VectorSelector {
	var out []*parser.VectorSelector
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, vs)
		}
		return nil
	})
	return out
}

func metricName(vs *parser.VectorSelector) string {
	if vs.Name != "" {
		return vs.Name
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
			return m.Value
		}
	}
	return ""
}

// exported is what a jetgate's /metrics shows: each sample name's label
// names, and their values.
type exported map[string]map[string]map[string]bool

func (ex exported) add(name string, ls []*dto.LabelPair, extra ...string) {
	if ex[name] == nil {
		ex[name] = map[string]map[string]bool{}
	}
	put := func(k, v string) {
		if ex[name][k] == nil {
			ex[name][k] = map[string]bool{}
		}
		ex[name][k][v] = true
	}
	for _, l := range ls {
		put(l.GetName(), l.GetValue())
	}
	for i := 0; i+1 < len(extra); i += 2 {
		put(extra[i], extra[i+1])
	}
}

// parseExposition reads the text format into sample names, as Prometheus
// stores them: a histogram's _bucket (with le), _count and _sum.
func parseExposition(t *testing.T, body []byte) exported {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	ex := exported{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				ex.add(name+"_bucket", m.GetLabel(), "le", "+Inf")
				ex.add(name+"_count", m.GetLabel())
				ex.add(name+"_sum", m.GetLabel())
			case dto.MetricType_SUMMARY:
				ex.add(name, m.GetLabel(), "quantile", "0.5")
				ex.add(name+"_count", m.GetLabel())
				ex.add(name+"_sum", m.GetLabel())
			default:
				ex.add(name, m.GetLabel())
			}
		}
	}
	return ex
}

// targetLabels are the labels Prometheus (and its operator) add to every
// series it scrapes.
var targetLabels = map[string]bool{"job": true, "instance": true, "namespace": true, "pod": true, "service": true, "container": true, "endpoint": true}

// grpcCodes are the values of jetgate_rpc_duration_seconds's code label:
// gRPC's code names, of which a jetgate that has served a few calls shows
// only some.
var grpcCodes = []string{"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound", "AlreadyExists",
	"PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange", "Unimplemented", "Internal",
	"Unavailable", "DataLoss", "Unauthenticated"}

// gatewaySource is the gateway's Go source that registers metrics and
// names their label values, tests left out.
var gatewaySource = sync.OnceValues(func() (string, error) {
	var b strings.Builder
	for _, dir := range []string{"app", "server", "gateway", "internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(repo, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			b.Write(src)
			return err
		})
		if err != nil && !os.IsNotExist(err) {
			return "", err
		}
	}
	return b.String(), nil
})

// registeredInSource says whether the gateway's source registers a metric
// of this sample name (a histogram's by its own name).
func registeredInSource(t *testing.T, sample string) bool {
	t.Helper()
	src, err := gatewaySource()
	if err != nil {
		t.Fatal(err)
	}
	base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(sample, "_bucket"), "_count"), "_sum")
	return regexp.MustCompile(`(Name:\s*|NewDesc\()"` + regexp.QuoteMeta(base) + `"`).MatchString(src)
}

// checkNames checks that every metric q names is on ex, with the labels q
// uses (matchers, grouping, label_values); found records how each name was
// found.
func checkNames(t *testing.T, q query, ex exported, found map[string]string) {
	t.Helper()
	e, err := parse(q)
	if err != nil {
		t.Error(err)
		return
	}
	known := func(n parser.Node) map[string]bool {
		ls := map[string]bool{}
		for _, vs := range selectors(n) {
			for l := range ex[metricName(vs)] {
				ls[l] = true
			}
		}
		return ls
	}
	for _, vs := range selectors(e) {
		name := metricName(vs)
		series, ok := ex[name]
		switch {
		case ok:
			found[name] = "/metrics"
		case registeredInSource(t, name):
			if found[name] == "" {
				found[name] = "Go source"
			}
			continue
		default:
			t.Errorf("%s: %s is not on a running jetgate's /metrics, nor registered in its source", q.where, name)
			continue
		}
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel || targetLabels[m.Name] {
				continue
			}
			values, has := series[m.Name]
			if !has {
				t.Errorf("%s: %s has no label %s", q.where, name, m.Name)
				continue
			}
			if m.Type == labels.MatchEqual && !values[m.Value] && !valueInSource(t, m.Name, m.Value) {
				t.Errorf("%s: %s{%s} matches a value jetgate never gives", q.where, name, m)
			}
		}
	}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if a, ok := n.(*parser.AggregateExpr); ok {
			ls := known(a.Expr)
			for _, g := range a.Grouping {
				if !ls[g] && !targetLabels[g] {
					t.Errorf("%s: groups by %s, which %s does not have", q.where, g, a.Expr)
				}
			}
		}
		return nil
	})
	if q.label != "" && !known(e)[q.label] && !targetLabels[q.label] {
		t.Errorf("%s: label_values of %s, which %s does not have", q.where, q.label, q.expr)
	}
}

// valueInSource says whether jetgate gives a label the value where the test
// has not seen it: a gRPC code, or a reason the source spells out.
func valueInSource(t *testing.T, label, value string) bool {
	t.Helper()
	if label == "code" {
		return slices.Contains(grpcCodes, value)
	}
	src, err := gatewaySource()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(src, `"`+value+`"`)
}

// The configuration of the jetgate the expressions are checked against: a
// consumer with a dead letter and one pushed, so that the series created
// only for those exist.
const metricsConfig = `
embedded: {data_dir: data}
listen: {grpc: "127.0.0.1:0", http: "127.0.0.1:0"}
streams:
  - {name: ORDERS, subjects: ["orders.>"]}
  - {name: DEAD_LETTERS, subjects: ["dead.>"]}
consumers:
  - {stream: ORDERS, name: billing, max_deliver: 3, dead_letter: {subject: dead.billing, on_term: true}}
  - stream: ORDERS
    name: shipping
    max_deliver: 3
    dead_letter: {subject: dead.shipping, on_term: true}
    push: {url: "%s/hooks/orders"}
`

// Every metric the dashboard and the alerts name is one a running jetgate
// exports, with the labels they use: jetgate started with embedded NATS,
// one call made (RPC latency has a series only once called), /metrics
// scraped. A name not found there would be checked against the metrics the
// source registers, and said so.
func TestPromQLNamesExportedMetrics(t *testing.T) {
	qs := allQueries(t)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer hook.Close()
	base := startJetgate(t, fmt.Sprintf(metricsConfig, hook.URL))
	get(t, base+"/v1/streams/ORDERS/consumers/billing")
	ex := parseExposition(t, get(t, base+"/metrics"))

	found := map[string]string{}
	for _, q := range qs {
		checkNames(t, q, ex, found)
	}
	for _, name := range slices.Sorted(maps.Keys(found)) {
		t.Logf("%-45s found on %s", name, found[name])
	}
}
