package gateway_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/app"
	"github.com/jetgate/jetgate/internal/natstest"
)

// startApp runs a whole jetgate process (embedded NATS, gRPC, REST) on random
// ports until the end of the test, and returns its addresses.
func startApp(t testing.TB, set func(*app.Options)) app.Addrs {
	t.Helper()
	o := app.Defaults()
	o.NATSURL = ""
	o.NATSListen = "127.0.0.1:-1"
	o.GRPCAddr = "127.0.0.1:0"
	o.HTTPAddr = "127.0.0.1:0"
	o.DataDir = t.TempDir()
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if set != nil {
		set(&o)
	}
	started := make(chan app.Addrs, 1)
	o.Started = func(a app.Addrs) { started <- a }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, o) }()
	select {
	case a := <-started:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run after cancel: %v", err)
			}
		})
		return a
	case err := <-done:
		cancel()
		t.Fatalf("Run did not start: %v", err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("Run did not start within 10s")
	}
	return app.Addrs{}
}

// rest is a REST client of one running process.
type rest struct {
	t    testing.TB
	base string
	hc   *http.Client
}

func newREST(t testing.TB, a app.Addrs) *rest {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &rest{t: t, base: "http://" + a.HTTP, hc: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

// reply is a decoded JSON response.
type reply struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

func (c *rest) send(req *http.Request) reply {
	c.t.Helper()
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, raw: raw}
	if err := json.Unmarshal(raw, &r.body); err != nil {
		c.t.Fatalf("%s %s: %d with a body that is not a JSON object: %q", req.Method, req.URL.Path, resp.StatusCode, raw)
	}
	return r
}

// post sends body (a string or []byte as is, anything else as JSON).
func (c *rest) post(path string, body any) reply {
	c.t.Helper()
	var b []byte
	switch v := body.(type) {
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			c.t.Fatal(err)
		}
	}
	req, err := http.NewRequest(http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return c.send(req)
}

func (c *rest) get(path string) reply {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.base+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	return c.send(req)
}

// ok fails the test unless the reply is 200.
func (r reply) ok(t testing.TB) reply {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d, body %s; want 200", r.status, r.raw)
	}
	return r
}

// reason is the ErrorInfo reason of an error reply.
func (r reply) reason() string {
	ds, _ := r.body["details"].([]any)
	for _, d := range ds {
		if m, _ := d.(map[string]any); m["@type"] == "type.googleapis.com/google.rpc.ErrorInfo" {
			s, _ := m["reason"].(string)
			return s
		}
	}
	return ""
}

func obj(t testing.TB, v any, path string) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: %v is not a JSON object", path, v)
	}
	return m
}

func list(t testing.TB, v any, path string) []any {
	t.Helper()
	l, ok := v.([]any)
	if !ok {
		t.Fatalf("%s: %v is not a JSON array", path, v)
	}
	return l
}

func tokensOf(t testing.TB, msgs []any) []string {
	t.Helper()
	var out []string
	for i, m := range msgs {
		tok, _ := obj(t, m, "messages[]")["token"].(string)
		if tok == "" {
			t.Fatalf("messages[%d] has no token", i)
		}
		out = append(out, tok)
	}
	return out
}

func timeOf(t testing.TB, v any, what string) time.Time {
	t.Helper()
	s, _ := v.(string)
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%s %q is not an RFC 3339 timestamp", what, v)
	}
	return ts
}

// noFailures checks a settle reply succeeded for every token.
func noFailures(t testing.TB, r reply, what string) {
	t.Helper()
	r.ok(t)
	if f := list(t, r.body["failures"], "failures"); len(f) != 0 {
		t.Fatalf("%s: failures %v; want none", what, f)
	}
}

const (
	consumerPath = "/v1/streams/ORDERS/consumers/billing"
	publishPath  = "/v1/streams/ORDERS:publish"
)

func TestRESTWalkthrough(t *testing.T) {
	a := startApp(t, nil)
	c := newREST(t, a)

	pub := c.post(publishPath, `{"subject":"orders.new","data":"`+base64.StdEncoding.EncodeToString([]byte("order 1"))+
		`","headers":{"X-A":{"values":["1","2"]}},"msgId":"m1"}`).ok(t)
	if pub.body["stream"] != "ORDERS" || pub.body["seq"] != "1" || pub.body["duplicate"] != false {
		t.Fatalf("publish reply %s; want stream ORDERS, seq \"1\" (uint64 as a string), duplicate false", pub.raw)
	}
	for _, d := range []string{"order 2", "order 3", "order 4"} {
		c.post(publishPath, map[string]any{"subject": "orders.new", "data": []byte(d)}).ok(t)
	}
	// The consumer counts new messages a moment after the stream stores
	// them: the first delivery's numPending is only 3 once it has.
	natstest.Eventually(t, 5*time.Second, "the consumer counts the 4 messages pending", func() bool {
		st, ok := c.get(consumerPath).ok(t).body["state"].(map[string]any)
		return ok && st["numPending"] == "4"
	})

	fetchedAt := time.Now()
	f := c.post(consumerPath+":fetch", `{"batch":10,"expires":"1s"}`).ok(t)
	msgs := list(t, f.body["messages"], "messages")
	if len(msgs) != 4 {
		t.Fatalf("fetched %d messages; want 4: %s", len(msgs), f.raw)
	}
	m := obj(t, msgs[0], "messages[0]")
	if m["subject"] != "orders.new" || m["data"] != base64.StdEncoding.EncodeToString([]byte("order 1")) {
		t.Errorf("message 0: subject %v data %v", m["subject"], m["data"])
	}
	xa := obj(t, obj(t, m["headers"], "headers")["X-A"], "headers.X-A")
	if vs := list(t, xa["values"], "X-A.values"); len(vs) != 2 || vs[0] != "1" || vs[1] != "2" {
		t.Errorf("header X-A %v; want [1 2]", vs)
	}
	if _, snake := m["lease_deadline"]; snake {
		t.Errorf("message has a snake_case field: %v", m)
	}
	deadline := timeOf(t, m["leaseDeadline"], "leaseDeadline")
	if d := deadline.Sub(fetchedAt); d < 25*time.Second || d > 30*time.Second {
		t.Errorf("lease deadline %v after the fetch; want a little under the 30s ack_wait", d)
	}
	md := obj(t, m["metadata"], "metadata")
	for k, want := range map[string]any{
		"stream": "ORDERS", "consumer": "billing", "streamSeq": "1", "consumerSeq": "1",
		"numDelivered": "1", "numPending": "3", // three more wait behind it
	} {
		if md[k] != want {
			t.Errorf("metadata.%s = %#v; want %#v", k, md[k], want)
		}
	}
	if ts := timeOf(t, md["timestamp"], "metadata.timestamp"); time.Since(ts) > time.Minute {
		t.Errorf("metadata.timestamp %v is not the publish time", ts)
	}
	toks := tokensOf(t, msgs)

	info := c.get(consumerPath).ok(t)
	if info.body["gatewayLeases"] != "4" {
		t.Errorf("gatewayLeases %v after fetching 4; want \"4\"", info.body["gatewayLeases"])
	}

	ext := c.post(consumerPath+":extend", map[string]any{"tokens": []string{toks[3]}}).ok(t)
	leases := list(t, ext.body["leases"], "leases")
	if len(leases) != 1 {
		t.Fatalf("extend: %s; want one lease", ext.raw)
	}
	l := obj(t, leases[0], "leases[0]")
	newTok, _ := l["newToken"].(string)
	if l["token"] != toks[3] || newTok == "" || newTok == toks[3] {
		t.Errorf("extended lease %v; want the old token and a new one", l)
	}
	if nd := timeOf(t, l["leaseDeadline"], "leases[0].leaseDeadline"); nd.Before(deadline) {
		t.Errorf("extended deadline %v is before the first one %v", nd, deadline)
	}

	noFailures(t, c.post(consumerPath+":ack", map[string]any{"tokens": []string{toks[0]}}), "ack")
	noFailures(t, c.post(consumerPath+":nak", map[string]any{"tokens": []string{toks[1]}, "delay": "5s"}), "nak")

	nc, err := nats.Connect(a.NATS)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	advisories, err := nc.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.ORDERS.billing")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	noFailures(t, c.post(consumerPath+":term", map[string]any{"tokens": []string{toks[2]}, "reason": "bad order"}), "term")
	adv, err := advisories.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatalf("no termination advisory: %v", err)
	}
	var term struct {
		StreamSeq uint64 `json:"stream_seq"`
		Reason    string `json:"reason"`
	}
	if err := json.Unmarshal(adv.Data, &term); err != nil || term.StreamSeq != 3 || term.Reason != "bad order" {
		t.Errorf("termination advisory %s; want stream_seq 3 and reason \"bad order\"", adv.Data)
	}

	noFailures(t, c.post(consumerPath+":ack", map[string]any{"tokens": []string{newTok}}), "ack of the extended token")

	// Without the delay the nak'ed message would be available at once.
	again := c.post(consumerPath+":fetch", `{"batch":10,"expires":"0s"}`).ok(t)
	if got := list(t, again.body["messages"], "messages"); len(got) != 0 {
		t.Errorf("fetched %d messages right after a nak with delay 5s; want none", len(got))
	}
	if again.body["emptyReason"] != "EMPTY_REASON_NO_MESSAGES" {
		t.Errorf("emptyReason %v; want EMPTY_REASON_NO_MESSAGES", again.body["emptyReason"])
	}

	info = c.get(consumerPath).ok(t)
	cfg := obj(t, info.body["config"], "config")
	for k, want := range map[string]any{
		"durableName": "billing", "ackWait": "30s", "maxAckPending": "1024", "deliverPolicy": "DELIVER_POLICY_ALL",
		"ackPolicy": "ACK_POLICY_EXPLICIT", "maxDeliver": "-1", "maxWaiting": "512",
	} {
		if cfg[k] != want {
			t.Errorf("config.%s = %#v; want %#v", k, cfg[k], want)
		}
	}
	if info.body["gatewayLeases"] != "0" {
		t.Errorf("gatewayLeases %v after settling all; want \"0\"", info.body["gatewayLeases"])
	}
	st := obj(t, info.body["state"], "state")
	if d := obj(t, st["delivered"], "state.delivered"); d["streamSeq"] != "4" {
		t.Errorf("state.delivered %v; want streamSeq \"4\"", d)
	}
}

func TestRESTAcceptsBothSpellings(t *testing.T) {
	c := newREST(t, startApp(t, nil))

	first := c.post(publishPath, `{"subject":"orders.new","data":"AQ==","msg_id":"d1"}`).ok(t)
	second := c.post(publishPath, `{"subject":"orders.new","data":"AQ==","msgId":"d1"}`).ok(t)
	if first.body["duplicate"] != false || second.body["duplicate"] != true || second.body["seq"] != first.body["seq"] {
		t.Errorf("publish msg_id then msgId d1: %s then %s; want the second a duplicate with the same seq", first.raw, second.raw)
	}
	third := c.post(publishPath, `{"subject":"orders.new","data":"AQ==","msgId":"d2"}`).ok(t)
	if third.body["duplicate"] != false || third.body["seq"] == first.body["seq"] {
		t.Errorf("publish msgId d2: %s; want a new message", third.raw)
	}

	for _, body := range []string{
		`{"max_bytes":"-1","expires":"0s"}`, `{"maxBytes":-1,"expires":"0s"}`,
	} {
		if r := c.post(consumerPath+":fetch", body); r.status != http.StatusBadRequest || !strings.Contains(string(r.raw), "max_bytes") {
			t.Errorf("fetch %s: %d %s; want 400 about max_bytes (the field was read)", body, r.status, r.raw)
		}
	}
	for _, body := range []string{
		`{"max_bytes":"1048576","expires":"0s","batch":1}`, `{"maxBytes":1048576,"expires":"0s","batch":1}`,
	} {
		r := c.post(consumerPath+":fetch", body).ok(t)
		if n := len(list(t, r.body["messages"], "messages")); n != 1 {
			t.Errorf("fetch %s: %d messages; want 1", body, n)
		}
	}
}

func TestRESTErrors(t *testing.T) {
	c := newREST(t, startApp(t, nil))
	tooMany := make([]string, 1001)
	for i := range tooMany {
		tooMany[i] = "t"
	}
	tests := []struct {
		name   string
		method string
		path   string
		body   any
		status int
		reason string // "" when the error carries no ErrorInfo
	}{
		{"unknown consumer fetch", "POST", "/v1/streams/ORDERS/consumers/nope:fetch", `{"expires":"0s"}`, 404, "CONSUMER_NOT_FOUND"},
		{"unknown consumer get", "GET", "/v1/streams/ORDERS/consumers/nope", nil, 404, "CONSUMER_NOT_FOUND"},
		{"unknown consumer ack", "POST", "/v1/streams/ORDERS/consumers/nope:ack", `{"tokens":["x"]}`, 404, "CONSUMER_NOT_FOUND"},
		{"unknown stream publish", "POST", "/v1/streams/NOPE:publish", `{"subject":"nope.x"}`, 404, "STREAM_NOT_FOUND"},
		{"malformed JSON", "POST", consumerPath + ":fetch", `{"batch":`, 400, "MALFORMED_BODY"},
		{"unknown field", "POST", consumerPath + ":fetch", `{"bogus":1}`, 400, "MALFORMED_BODY"},
		{"batch over max", "POST", consumerPath + ":fetch", `{"batch":1001}`, 400, "INVALID_ARGUMENT"},
		{"negative batch", "POST", consumerPath + ":fetch", `{"batch":-1}`, 400, "INVALID_ARGUMENT"},
		{"negative expires", "POST", consumerPath + ":fetch", `{"expires":"-1s"}`, 400, "INVALID_ARGUMENT"},
		{"empty tokens", "POST", consumerPath + ":ack", `{"tokens":[]}`, 400, "INVALID_ARGUMENT"},
		{"no body", "POST", consumerPath + ":ack", ``, 400, "INVALID_ARGUMENT"},
		{"1001 tokens", "POST", consumerPath + ":ack", map[string]any{"tokens": tooMany}, 400, "INVALID_ARGUMENT"},
		{"negative nak delay", "POST", consumerPath + ":nak", `{"tokens":["x"],"delay":"-1s"}`, 400, "INVALID_ARGUMENT"},
		{"term reason too long", "POST", consumerPath + ":term", map[string]any{"tokens": []string{"x"}, "reason": strings.Repeat("r", 1025)}, 400, "INVALID_ARGUMENT"},
		{"subject outside the stream", "POST", publishPath, `{"subject":"payments.new","data":"AQ=="}`, 400, "SUBJECT_NOT_ALLOWED"},
		{"system subject", "POST", publishPath, `{"subject":"$JS.API.x","data":"AQ=="}`, 400, "SUBJECT_NOT_ALLOWED"},
		{"wildcard subject", "POST", publishPath, `{"subject":"orders.*"}`, 400, "INVALID_ARGUMENT"},
		{"no subject", "POST", publishPath, `{"data":"AQ=="}`, 400, "INVALID_ARGUMENT"},
		{"header with line break", "POST", publishPath, `{"subject":"orders.new","headers":{"X":{"values":["a\r\nB: c"]}}}`, 400, "INVALID_ARGUMENT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r reply
			if tt.method == "GET" {
				r = c.get(tt.path)
			} else {
				r = c.post(tt.path, tt.body)
			}
			if r.status != tt.status {
				t.Fatalf("status %d, body %s; want %d", r.status, r.raw, tt.status)
			}
			if got := r.reason(); got != tt.reason {
				t.Errorf("reason %q; want %q (body %s)", got, tt.reason, r.raw)
			}
			if msg, _ := r.body["message"].(string); msg == "" {
				t.Errorf("error without a message: %s", r.raw)
			}
			if _, ok := r.body["code"].(float64); !ok {
				t.Errorf("error without a numeric code: %s", r.raw)
			}
		})
	}
}

// chunked hides a reader's length, so that the client sends it chunked,
// without a Content-Length.
type chunked struct{ r io.Reader }

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p) }

func TestRESTBodyLimit(t *testing.T) {
	c := newREST(t, startApp(t, func(o *app.Options) { o.MaxBodyBytes = 1024 }))
	big := `{"tokens":["` + strings.Repeat("a", 2000-len(`{"tokens":[""]}`)) + `"]}`
	small := `{"tokens":["` + strings.Repeat("a", 200) + `"]}`
	atLimit := `{"tokens":["` + strings.Repeat("a", 1024-len(`{"tokens":[""]}`)) + `"]}`
	if len(big) != 2000 || len(atLimit) != 1024 {
		t.Fatalf("body sizes %d %d", len(big), len(atLimit))
	}
	tests := []struct {
		name    string
		body    string
		chunked bool
		status  int
	}{
		{"over, with length", big, false, http.StatusRequestEntityTooLarge},
		{"over, chunked", big, true, http.StatusRequestEntityTooLarge},
		{"at the limit, with length", atLimit, false, http.StatusOK},
		{"at the limit, chunked", atLimit, true, http.StatusOK},
		{"under, chunked", small, true, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tt.body)
			if tt.chunked {
				body = chunked{body}
			}
			req, err := http.NewRequest(http.MethodPost, c.base+consumerPath+":ack", body)
			if err != nil {
				t.Fatal(err)
			}
			if tt.chunked {
				req.ContentLength = -1
			}
			req.Header.Set("Content-Type", "application/json")
			r := c.send(req)
			if r.status != tt.status {
				t.Fatalf("status %d, body %s; want %d", r.status, r.raw, tt.status)
			}
			if tt.status == http.StatusRequestEntityTooLarge {
				if r.reason() != "BODY_TOO_LARGE" {
					t.Errorf("reason %q; want BODY_TOO_LARGE", r.reason())
				}
				return
			}
			// Passed through: the one (made-up) token fails on its own.
			f := list(t, r.body["failures"], "failures")
			if len(f) != 1 || obj(t, f[0], "failures[0]")["reason"] != "TOKEN_INVALID" {
				t.Errorf("failures %v; want one TOKEN_INVALID", f)
			}
		})
	}
}

func TestRESTPerTokenFailures(t *testing.T) {
	c := newREST(t, startApp(t, nil))
	c.post(publishPath, `{"subject":"orders.new","data":"AQ=="}`).ok(t)
	msgs := list(t, c.post(consumerPath+":fetch", `{"expires":"1s"}`).ok(t).body["messages"], "messages")
	if len(msgs) != 1 {
		t.Fatalf("fetched %d; want 1", len(msgs))
	}
	tok := tokensOf(t, msgs)[0]
	// Alter one character inside the MAC, the last 16 bytes.
	i := len(tok) - 5
	flip := map[bool]string{true: "B", false: "A"}[tok[i] == 'A']
	forged := tok[:i] + flip + tok[i+1:]

	check := func(r reply, wantIndex int, wantToken string, wantCode int, wantReason string) {
		t.Helper()
		f := list(t, r.ok(t).body["failures"], "failures")
		if len(f) != 1 {
			t.Fatalf("failures %s; want one", r.raw)
		}
		got := obj(t, f[0], "failures[0]")
		if len(got) != 5 {
			t.Errorf("failure has fields %v; want token, index, code, reason, message", got)
		}
		if got["token"] != wantToken || got["index"] != float64(wantIndex) || got["code"] != float64(wantCode) ||
			got["reason"] != wantReason {
			t.Errorf("failure %v; want token %.12s… index %d code %d reason %s", got, wantToken, wantIndex, wantCode, wantReason)
		}
		if msg, _ := got["message"].(string); msg == "" || strings.Contains(msg, "$JS") {
			t.Errorf("failure message %q: want a plain explanation", msg)
		}
	}
	// A good token and a bogus one: only the bogus one fails.
	check(c.post(consumerPath+":ack", map[string]any{"tokens": []string{tok, "bogus"}}), 1, "bogus", 3, "TOKEN_INVALID")
	// An altered token does not verify.
	check(c.post(consumerPath+":ack", map[string]any{"tokens": []string{forged}}), 0, forged, 3, "TOKEN_INVALID")
	// The same settle again succeeds; a different one does not.
	noFailures(t, c.post(consumerPath+":ack", map[string]any{"tokens": []string{tok}}), "repeated ack")
	check(c.post(consumerPath+":nak", map[string]any{"tokens": []string{tok}}), 0, tok, 9, "LEASE_SETTLED")
}

func TestRESTLeaseExpiry(t *testing.T) {
	c := newREST(t, startApp(t, func(o *app.Options) { o.AckWait = time.Second }))
	c.post(publishPath, `{"subject":"orders.new","data":"AQ=="}`).ok(t)
	msgs := list(t, c.post(consumerPath+":fetch", `{"expires":"1s"}`).ok(t).body["messages"], "messages")
	if len(msgs) != 1 {
		t.Fatalf("fetched %d; want 1", len(msgs))
	}
	m := obj(t, msgs[0], "messages[0]")
	deadline := timeOf(t, m["leaseDeadline"], "leaseDeadline")
	natstest.Eventually(t, 3*time.Second, "lease deadline passes", func() bool { return time.Now().After(deadline) })

	r := c.post(consumerPath+":ack", map[string]any{"tokens": []string{m["token"].(string)}}).ok(t)
	f := list(t, r.body["failures"], "failures")
	if len(f) != 1 || obj(t, f[0], "failures[0]")["reason"] != "LEASE_EXPIRED" {
		t.Fatalf("ack after the deadline: %s; want LEASE_EXPIRED", r.raw)
	}
	// The message comes back, as its second delivery.
	again := list(t, c.post(consumerPath+":fetch", `{"expires":"3s"}`).ok(t).body["messages"], "messages")
	if len(again) != 1 {
		t.Fatalf("refetched %d; want the message again", len(again))
	}
	md := obj(t, obj(t, again[0], "messages[0]")["metadata"], "metadata")
	if md["streamSeq"] != "1" || md["numDelivered"] != "2" {
		t.Errorf("redelivery metadata %v; want streamSeq 1, numDelivered 2", md)
	}
}

func TestRESTBinaryDataRoundTrips(t *testing.T) {
	c := newREST(t, startApp(t, nil))
	data := make([]byte, 256)
	for i := range data {
		data[i] = byte(i)
	}
	c.post(publishPath, map[string]any{"subject": "orders.bin", "data": data}).ok(t)
	msgs := list(t, c.post(consumerPath+":fetch", `{"expires":"1s"}`).ok(t).body["messages"], "messages")
	if len(msgs) != 1 {
		t.Fatalf("fetched %d; want 1", len(msgs))
	}
	s, _ := obj(t, msgs[0], "messages[0]")["data"].(string)
	got, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("data %q is not base64: %v", s, err)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("data came back as %x; want %x", got, data)
	}
}

func TestRESTHealthReadinessAndOpenAPI(t *testing.T) {
	c := newREST(t, startApp(t, nil))
	if r := c.get("/healthz").ok(t); r.body["status"] != "ok" {
		t.Errorf("/healthz %s", r.raw)
	}
	if r := c.get("/readyz").ok(t); r.body["status"] != "ready" {
		t.Errorf("/readyz %s", r.raw)
	}
	doc := c.get("/openapi.json").ok(t)
	paths := obj(t, doc.body["paths"], "paths")
	for _, p := range []string{
		"/v1/streams/{stream}/consumers/{consumer}:fetch",
		"/v1/streams/{stream}/consumers/{consumer}",
		"/v1/streams/{stream}:publish",
	} {
		if _, ok := paths[p]; !ok {
			t.Errorf("openapi.json has no path %s", p)
		}
	}
}

func FuzzRESTBody(f *testing.F) {
	a := startApp(f, func(o *app.Options) { o.MaxExpires = time.Second })
	tr := &http.Transport{}
	f.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	for _, seed := range []string{
		`{"batch":1,"expires":"0s"}`,
		`{"tokens":["bogus"]}`,
		`{"tokens":[]}`,
		`{"batch":-1,"expires":"-1s","maxBytes":"0"}`,
		`{"expires":"99999999999s"}`,
		`not json`,
		"\xff\x00{",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, verb := range []string{"ack", "fetch"} {
			resp, err := hc.Post("http://"+a.HTTP+consumerPath+":"+verb, "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				t.Fatalf(":%s with body %q: status %d %s", verb, body, resp.StatusCode, raw)
			}
		}
	})
}
