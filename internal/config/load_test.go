package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
)

const examplePath = "../../examples/two-consumers.yaml"

// A good file to break one line of at a time; line numbers below count in
// it.
const good = `nats: {url: ""}
embedded: {data_dir: data}
streams:
  - {name: ORDERS, subjects: ["orders.>"]}
  - {name: DEAD, subjects: ["dead.>"]}
consumers:
  - stream: ORDERS
    name: billing
    ack_wait: 30s
  - stream: ORDERS
    name: audit
    ack_wait: 1m
    dead_letter: {subject: dead.audit}
`

// badFile replaces the line with number n (from 1) of good by repl.
func badFile(n int, repl string) string {
	lines := strings.Split(good, "\n")
	lines[n-1] = repl
	return strings.Join(lines, "\n")
}

// parseAndValidate is what check-config does to a file before it applies
// flags: Parse, defaults, Validate.
func parseAndValidate(name, text string) (*Config, error) {
	c, err := Parse(name, []byte(text))
	if err != nil {
		return nil, err
	}
	c.fillDefaults()
	return c, c.Validate()
}

func TestGoodFileIsValid(t *testing.T) {
	if _, err := parseAndValidate("good.yaml", good); err != nil {
		t.Fatal(err)
	}
}

// Every bad file is refused with an *Error naming the field's path and line,
// and a message that says what is wrong.
func TestBadFiles(t *testing.T) {
	tests := []struct {
		name, text string
		path       string
		line       int
		msg        string // must appear in the message
	}{
		{"unknown top-level field", badFile(2, "embeded: {data_dir: data}"), "embeded", 2, `unknown field "embeded"`},
		{"unknown consumer field", badFile(12, "    ack_wiat: 1m"), "consumers[1].ack_wiat", 12, `unknown field "ack_wiat" (consumers[1] takes stream, name, ack_wait,`},
		{"unknown field in a flow mapping", badFile(13, "    dead_letter: {subject: dead.audit, on_trem: true}"), "consumers[1].dead_letter.on_trem", 13, `unknown field "on_trem"`},
		{"auth key without its hash", good + "auth: {api_keys: [{principal: p, sha256: secret}]}\n", "auth.api_keys[0].sha256", 14, "never the key itself"},
		{"auth unknown action", good + "auth: {api_keys: [{principal: p, sha256: " + strings.Repeat("ab", 32) + "}], grants: [{principal: p, stream: S, actions: [delete]}]}\n", "auth.grants[0].actions[0]", 14, "is not one of fetch, settle, read, publish, redrive, manage, seek, admin, metrics"},
		{"mtls without a client CA", good + "auth: {mtls: true}\n", "auth.mtls", 14, "needs listen.tls.client_ca"},
		{"jwt without an issuer", good + "auth: {jwt: {jwks_file: jwks.json, audience: jetgate}}\n", "auth.jwt.issuer", 14, "a token of any issuer"},
		{"jwt without an audience", good + "auth: {jwt: {jwks_file: jwks.json, issuer: \"https://idp\"}}\n", "auth.jwt.audience", 14, "signed for another service"},
		{"beyond loopback without auth", good + "listen: {grpc: \"0.0.0.0:9090\"}\n", "listen.grpc", 14, "beyond loopback without authentication"},
		{"bad duration", badFile(12, "    ack_wait: 3x"), "consumers[1].ack_wait", 12, `"3x" is not a duration`},
		{"duration without a unit", badFile(12, "    ack_wait: 30"), "consumers[1].ack_wait", 12, `"30" is not a duration (write it with a unit`},
		{"bad backoff step", badFile(12, "    backoff: [1s, soon]"), "consumers[1].backoff[1]", 12, `"soon" is not a duration`},
		{"unknown deliver policy", badFile(12, "    deliver_policy: everything"), "consumers[1].deliver_policy", 12,
			`"everything" is not a deliver policy: use one of all, last, new, by_start_sequence, by_start_time, last_per_subject`},
		{"policy is case sensitive", badFile(12, "    deliver_policy: ALL"), "consumers[1].deliver_policy", 12, `"ALL" is not a deliver policy`},
		{"start sequence missing", badFile(12, "    deliver_policy: by_start_sequence"), "consumers[1].deliver_policy", 12, "by_start_sequence needs opt_start_seq"},
		{"start sequence without its policy", badFile(12, "    opt_start_seq: 7"), "consumers[1].opt_start_seq", 12, "7 goes with deliver_policy by_start_sequence"},
		{"start time missing", badFile(12, "    deliver_policy: by_start_time"), "consumers[1].deliver_policy", 12, "give an RFC 3339 time"},
		{"start time without its policy", badFile(12, "    opt_start_time: 2026-01-02T15:04:05Z"), "consumers[1].opt_start_time", 12, "goes with deliver_policy by_start_time"},
		{"last per subject without filters", badFile(12, "    deliver_policy: last_per_subject"), "consumers[1].deliver_policy", 12, "last_per_subject needs filter_subjects"},
		{"ack wait too short", badFile(12, "    ack_wait: 500ms"), "consumers[1].ack_wait", 12, "500ms: must be at least 1s"},
		{"max ack pending zero", badFile(12, "    max_ack_pending: 0"), "consumers[1].max_ack_pending", 12, "must be at least 1"},
		{"max ack pending not a number", badFile(12, "    max_ack_pending: lots"), "consumers[1].max_ack_pending", 12, `"lots" is not a whole number`},
		{"max deliver zero", badFile(12, "    max_deliver: 0"), "consumers[1].max_deliver", 12, "give -1 (unlimited) or 1 or more"},
		{"bad filter subject", badFile(12, `    filter_subjects: ["orders.*x"]`), "consumers[1].filter_subjects[0]", 12, "a wildcard must be a whole token"},
		{"duplicate consumer", badFile(11, "    name: billing"), "consumers[1]", 10, `consumer "billing" of stream "ORDERS" is configured twice (first as consumers[0])`},
		{"consumer name", badFile(11, "    name: bill.ing"), "consumers[1].name", 11, `"bill.ing" is not a valid NATS name`},
		{"consumer without a name", badFile(11, "    durable: audit"), "consumers[1].durable", 11, `unknown field "durable"`},
		{"stream name missing", badFile(10, "  - stream: \"\""), "consumers[1].stream", 10, "required"},
		{"duplicate stream", badFile(5, `  - {name: ORDERS, subjects: ["dead.>"]}`), "streams[1].name", 5, `stream "ORDERS" is configured twice (first as streams[0])`},
		{"stream without subjects", badFile(5, "  - {name: DEAD}"), "streams[1].subjects", 5, "needs at least one subject"},
		{"stream subject", badFile(5, `  - {name: DEAD, subjects: ["dead.>.x"]}`), "streams[1].subjects[0]", 5, "> must be the last token"},
		{"dead letter wildcard", badFile(13, "    dead_letter: {subject: dead.*}"), "consumers[1].dead_letter.subject", 13, "is not a literal subject"},
		{"dead letter missing subject", badFile(13, "    dead_letter: {on_term: true}"), "consumers[1].dead_letter.subject", 13, "required"},
		{"dead letter system subject", badFile(13, "    dead_letter: {subject: $JS.dead}"), "consumers[1].dead_letter.subject", 13, "belong to the system"},
		{"dead letter into its own stream", badFile(13, "    dead_letter: {subject: orders.dead}"), "consumers[1].dead_letter.subject", 13, `a subject of stream "ORDERS", the consumer's own`},
		{"dead letter shared", badFile(9, "    dead_letter: {subject: dead.audit}"), "consumers[1].dead_letter.subject", 13, "already the dead-letter subject of consumers[0]"},
		{"given twice", badFile(12, "    stream: ORDERS"), "consumers[1].stream", 12, "given twice (first on line 10)"},
		{"wrong kind", badFile(2, "embedded: jetgate-data"), "embedded", 2, `want a mapping of data_dir, listen, not "jetgate-data"`},
		{"not a list", good + "tokens: {key_files: key.txt}\n", "tokens.key_files", 14, `want a list, not "key.txt"`},
		{"on_term not a bool", badFile(13, "    dead_letter: {subject: dead.audit, on_term: maybe}"), "consumers[1].dead_letter.on_term", 13, `"maybe" is not true or false`},
		{"listener TLS key without cert", good + "listen: {tls: {key: k.pem}}\n", "listen.tls.key", 14, "go together"},
		{"CORS origin with a path", good + "listen: {cors_origins: [\"https://a.example/app\"]}\n", "listen.cors_origins[0]", 14, "give an origin"},
		{"NATS cert without key", badFile(1, `nats: {url: "nats://x:4222", tls: {cert: c.pem}}`), "nats.tls.cert", 1, "goes together with key"},
		{"embedded listen", badFile(2, "embedded: {data_dir: data, listen: localhost}"), "embedded.listen", 2, "give host:port"},
		{"embedded store", badFile(2, `embedded: {data_dir: ""}`), "embedded.data_dir", 2, "needs a directory"},
		{"limit", good + "limits: {max_batch: 0}\n", "limits.max_batch", 14, "0: must be at least 1"},
		{"limit duration", good + "limits: {max_expires: forever}\n", "limits.max_expires", 14, `"forever" is not a duration`},
		{"fetch bytes", good + "limits: {max_fetch_bytes: 100}\n", "limits.max_fetch_bytes", 14, "between 1 KiB and 64 MiB"},
		{"nak delay cap", good + "limits: {max_nak_delay: 500ms}\n", "limits.max_nak_delay", 14, "500ms: must be at least 1s (the default is 24h)"},
		{"nak delay cap duration", good + "limits: {max_nak_delay: forever}\n", "limits.max_nak_delay", 14, `"forever" is not a duration`},
		{"second document", good + "---\nnats: {}\n", "", 14, "a second YAML document"},
		{"no consumers", "streams: []\n", "consumers", 0, "no consumer is configured"},
		{"admin without streams", good + "admin: {consumers: [\"team-*\"]}\n", "admin.streams", 14, "name at least one pattern"},
		{"admin bad pattern", good + "admin: {streams: [\"[\"], consumers: [\"*\"]}\n", "admin.streams", 14, "is not a pattern"},
		{"admin on jetgate's own", good + "admin: {streams: [JETGATE_ADVISORIES], consumers: [\"*\"]}\n", "admin.streams", 14, "jetgate's own streams"},
		{"admin negative bound", good + "admin: {streams: [ORDERS], consumers: [\"*\"], max_deliver: -2}\n", "admin.max_deliver", 14, "must not be negative"},
		// Every create would be refused: no ack_wait under a second is taken.
		{"admin max_ack_wait under the least", good + "admin: {streams: [ORDERS], consumers: [\"*\"], max_ack_wait: 500ms}\n", "admin.max_ack_wait", 14, "must be at least 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseAndValidate("bad.yaml", tt.text)
			wantError(t, err, tt.path, tt.line, tt.msg)
		})
	}
}

// wantError checks that err is an *Error of bad.yaml at path (any, if
// empty) and line, whose message says msg.
func wantError(t *testing.T, err error, path string, line int, msg string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T); want a *config.Error", err, err)
	}
	if path != "" && e.Path != path {
		t.Errorf("path %q; want %q (%v)", e.Path, path, err)
	}
	if e.Line != line {
		t.Errorf("line %d; want %d (%v)", e.Line, line, err)
	}
	if !strings.Contains(e.Msg, msg) {
		t.Errorf("message %q does not say %q", e.Msg, msg)
	}
	if e.File != "bad.yaml" || !strings.HasPrefix(err.Error(), "bad.yaml:") {
		t.Errorf("error %q does not start with the file name", err)
	}
}

// Cases of two lines.
func TestBadFilesInBlockForm(t *testing.T) {
	for _, tt := range []struct {
		repl, path string
		line       int
		msg        string
	}{
		{"    deliver_policy: by_start_time\n    opt_start_time: 2026-01-02 15:04", "consumers[1].opt_start_time", 13, `"2026-01-02 15:04": give an RFC 3339 time`},
		{"    max_deliver: 2\n    backoff: [1s, 2s]", "consumers[1].max_deliver", 12, "2: must be more than the 2 steps of backoff"},
		{"    priority_groups: [main]\n    priority_policy: sticky", "consumers[1].priority_policy", 13, `"sticky" is not a priority policy`},
		{"    priority_groups: [main]\n    priority_timeout: 1m", "consumers[1].priority_groups", 12, "need priority_policy"},
		{"    priority_groups: [main, \"no spaces\"]\n    priority_policy: overflow", "consumers[1].priority_groups[1]", 12, "a group is 1 to 16 characters"},
		{"    priority_policy: overflow\n    priority_timeout: 1m", "consumers[1].priority_policy", 12, "overflow needs priority_groups"},
		{"    priority_groups: [main]\n    priority_policy: overflow\n    priority_timeout: 1m", "consumers[1].priority_timeout", 14, "goes with priority_policy pinned_client"},
		{"    pause_until: tomorrow", "consumers[1].pause_until", 12, `"tomorrow": give an RFC 3339 time`},
	} {
		_, err := parseAndValidate("bad.yaml", badFile(12, tt.repl))
		var e *Error
		if !errors.As(err, &e) || e.Path != tt.path || e.Line != tt.line || !strings.Contains(e.Msg, tt.msg) {
			t.Errorf("%q: error %v; want %s at line %d saying %q", tt.repl, err, tt.path, tt.line, tt.msg)
		}
	}
}

func TestErrorText(t *testing.T) {
	_, err := parseAndValidate("jetgate.yaml", badFile(12, "    ack_wait: 3x"))
	if want := `jetgate.yaml:12: consumers[1].ack_wait: "3x" is not a duration (write it with a unit: 500ms, 30s, 1m, 1h30m)`; err == nil || err.Error() != want {
		t.Errorf("error\n %v\nwant\n %s", err, want)
	}
	_, err = parseAndValidate("jetgate.yaml", "nats: {url: x}\nbogus: 1\n")
	if want := `jetgate.yaml:2: bogus: unknown field "bogus" (the file takes nats, embedded, listen, tokens, streams, consumers, on_demand, auth, limits, console, admin)`; err == nil || err.Error() != want {
		t.Errorf("error\n %v\nwant\n %s", err, want)
	}
	_, err = Load(filepath.Join(t.TempDir(), "missing.yaml"))
	if err == nil || !strings.Contains(err.Error(), "missing.yaml: cannot read the configuration file") {
		t.Errorf("missing file: %v", err)
	}
}

func TestSyntaxErrorHasItsLine(t *testing.T) {
	_, err := Parse("bad.yaml", []byte("nats:\n  url: x\n  creds: [a\n"))
	var e *Error
	if !errors.As(err, &e) || e.Line == 0 || e.File != "bad.yaml" {
		t.Fatalf("error %v; want a *config.Error with a line", err)
	}
}

func TestEmptyFileIsAllDefaults(t *testing.T) {
	for _, text := range []string{"", "# nothing\n", "~\n"} {
		c, err := Parse("empty.yaml", []byte(text))
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if c.NATS.URL != "" || len(c.Consumers) != 0 || len(c.lines) != 0 {
			t.Errorf("%q parsed to %+v", text, c)
		}
	}
}

func TestNullIsLeftOut(t *testing.T) {
	c, err := Parse("n.yaml", []byte("limits: {max_batch: ~}\nconsumers:\n  - {stream: S, name: c, ack_wait: }\n"))
	if err != nil {
		t.Fatal(err)
	}
	c.fillDefaults()
	if c.named("limits.max_batch") || c.Limits.MaxBatch != 1000 || c.named("consumers[0].ack_wait") {
		t.Errorf("a null value counts as named: %+v", c)
	}
}

func TestMergeKeys(t *testing.T) {
	text := `
x-common: &common {ack_wait: 10s, max_deliver: 4}
consumers:
  - {<<: *common, stream: A, name: a}
  - {<<: *common, stream: B, name: b, max_deliver: 2}
`
	// x-common is not a field: merge keys are read, but anchors must live
	// inside a known field.
	if _, err := Parse("m.yaml", []byte(text)); err == nil || !strings.Contains(err.Error(), `unknown field "x-common"`) {
		t.Fatalf("error %v; want x-common refused", err)
	}
	text = `
consumers:
  - &common {stream: A, name: a, ack_wait: 10s, max_deliver: 4}
  - {<<: *common, stream: B, name: b, max_deliver: 2}
  - {<<: *common, stream: C, name: c, ack_wiat: 1s}
`
	_, err := Parse("m.yaml", []byte(text))
	if err == nil || !strings.Contains(err.Error(), "m.yaml:5: consumers[2].ack_wiat: unknown field") {
		t.Fatalf("error %v; want the unknown field after a merge", err)
	}
	c, err := Parse("m.yaml", []byte(strings.Replace(text, "ack_wiat", "ack_wait", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if b := c.Consumers[1]; b.Stream != "B" || b.AckWait != Duration(10*time.Second) || b.MaxDeliver != 2 {
		t.Errorf("merged consumer %+v", b)
	}
}

// The example file under version control: two consumers on two streams, a
// dead-letter stream, every field of section 7 that a consumer takes.
func TestExampleFile(t *testing.T) {
	c, err := Resolve(examplePath, DefaultFlags())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Streams, []Stream{
		{Name: "ORDERS", Subjects: []string{"orders.>"}, AllowMsgTTL: true, AllowAtomic: true},
		{Name: "PAYMENTS", Subjects: []string{"payments.>"}},
		{Name: "DEAD_LETTERS", Subjects: []string{"dead.>"}},
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("streams %+v; want %+v", got, want)
	}
	all := jetstream.DeliverAllPolicy
	want := []consumer.Config{
		{Stream: "ORDERS", Name: "billing", AckWait: 30 * time.Second, MaxAckPending: 1024, DeliverPolicy: &all,
			MaxDeliver: 5, BackOff: []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute},
			DeadLetter: &consumer.DeadLetter{Subject: "dead.billing", OnTerm: true}},
		{Stream: "PAYMENTS", Name: "ledger", AckWait: time.Minute, FilterSubjects: []string{"payments.card.>", "payments.bank.>"},
			MaxDeliver: 3, DeadLetter: &consumer.DeadLetter{Subject: "dead.ledger"}},
	}
	if got := c.ConsumerConfigs(); !reflect.DeepEqual(got, want) {
		t.Errorf("consumers\n got %+v\nwant %+v", got, want)
	}
	for _, dl := range []string{"dead.billing", "dead.ledger"} {
		if s := c.StreamBinding(dl); s == nil || s.Name != "DEAD_LETTERS" {
			t.Errorf("%s is bound to %v; want DEAD_LETTERS", dl, s)
		}
	}
	if c.Listen.GRPC != "127.0.0.1:9090" || c.Listen.HTTP != "127.0.0.1:8080" || c.Embedded.DataDir != "../../examples/two-consumers-data" ||
		c.Embedded.Listen != "" || c.NATS.URL != "" || c.Limits != defaultLimits() {
		t.Errorf("process settings %+v %+v %+v %+v", c.NATS, c.Embedded, c.Listen, c.Limits)
	}
}

// Whatever a consumer does not name stays zero, so that bootstrap leaves it
// as the server has it; the process settings get their defaults.
func TestUnnamedFieldsStayZero(t *testing.T) {
	path := filepath.Join(t.TempDir(), "min.yaml")
	if err := os.WriteFile(path, []byte("consumers: [{stream: ORDERS, name: billing}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Resolve(path, Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ConsumerConfigs(); !reflect.DeepEqual(got, []consumer.Config{{Stream: "ORDERS", Name: "billing"}}) {
		t.Errorf("consumer %+v; want only stream and name", got)
	}
	if c.Listen.GRPC != DefaultGRPCAddr || c.Listen.HTTP != DefaultHTTPAddr || c.Embedded.DataDir != DefaultDataDir ||
		c.Embedded.Listen != "" || c.Limits != defaultLimits() || len(c.Streams) != 0 {
		t.Errorf("defaults: %+v", c)
	}
}

func TestSubjects(t *testing.T) {
	for _, tt := range []struct {
		pattern, subject string
		match            bool
	}{
		{"orders.>", "orders.new", true},
		{"orders.>", "orders.eu.new", true},
		{"orders.>", "orders", false},
		{"orders.*", "orders.new", true},
		{"orders.*", "orders.eu.new", false},
		{"*.new", "orders.new", true},
		{"orders.new", "orders.new", true},
		{"orders.new", "orders.old", false},
		{">", "anything.at.all", true},
		{"dead", "dead.billing", false},
	} {
		if got := subjectMatches(tt.pattern, tt.subject); got != tt.match {
			t.Errorf("subjectMatches(%q, %q) = %v", tt.pattern, tt.subject, got)
		}
	}
}

// Parse never panics, whatever the file holds.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile(examplePath); err == nil {
		f.Add(b)
	}
	f.Add([]byte(good))
	f.Add([]byte("consumers: [{<<: [*a]}]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if c, err := Parse("fuzz.yaml", b); err == nil {
			c.fillDefaults()
			_ = c.Validate()
		}
	})
}

// The production example under version control is a valid configuration:
// authentication on, TLS with client certificates, grants that auth takes.
func TestProductionExampleFile(t *testing.T) {
	c, err := Resolve(filepath.Join("..", "..", "examples", "production.yaml"), DefaultFlags())
	if err != nil {
		t.Fatal(err)
	}
	if !c.Auth.Enabled() || !c.Auth.MTLS || c.Listen.TLS.ClientCA == "" || len(c.Auth.Grants) != 3 {
		t.Fatalf("auth %+v, listen %+v; want authentication with mTLS and three grants", c.Auth, c.Listen)
	}
	a := c.AuthConfig()
	if a.JWT == nil || a.JWT.Audience != "jetgate" || len(a.APIKeys) != 1 || a.Grants[2].Actions[1] != "redrive" {
		t.Fatalf("auth config %+v", a)
	}
	var out strings.Builder
	if err := Write(&out, c); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8") {
		t.Errorf("check-config prints an API key hash:\n%s", out.String())
	}
}

// An ack_wait beside a backoff whose first step differs is warned of, not
// refused (DESIGN section 7's own example has one): the server waits for a
// first delivery by the step, whatever ack_wait says.
func TestAnAckWaitBesideABackoffIsWarnedOf(t *testing.T) {
	c, err := Parse("jetgate.yaml", []byte("consumers:\n  - stream: ORDERS\n    name: billing\n    ack_wait: 30s\n    backoff: [1s, 10s]\n    max_deliver: 5\n"))
	if err != nil {
		t.Fatal(err)
	}
	ws := c.Warnings()
	if len(ws) != 1 || !strings.Contains(ws[0], "consumers[0].ack_wait: 30s with backoff: the server takes the backoff's first step (1s)") {
		t.Fatalf("warnings %q; want one of ack_wait beside a backoff", ws)
	}
	c, err = Parse("jetgate.yaml", []byte("consumers:\n  - stream: ORDERS\n    name: billing\n    ack_wait: 30s\n    backoff: [30s, 1m]\n"))
	if err != nil || len(c.Warnings()) != 0 {
		t.Fatalf("ack_wait its first step: %v, warnings %q; want none", err, c.Warnings())
	}
}
