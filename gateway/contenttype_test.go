package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/app"
)

// jetStream connects to the embedded NATS server of a running process, as
// an operator's tool would.
func jetStream(t *testing.T, a app.Addrs) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(a.NATS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// stream is the ORDERS stream of a running process.
func stream(t *testing.T, a app.Addrs) jetstream.Stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := jetStream(t, a).Stream(ctx, "ORDERS")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func msgCount(t *testing.T, s jetstream.Stream) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// request sends a request with exactly the Content-Type headers given.
func (c *rest) request(method, path, body string, contentTypes ...string) reply {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, ct := range contentTypes {
		req.Header.Add("Content-Type", ct)
	}
	return c.send(req)
}

// A web page can post to any address without a CORS preflight as long as
// the request is "simple": text/plain, a form, or no Content-Type at all.
// REST refuses every such body with 415 before it reaches a service, so a
// page a browser opens cannot publish, fetch or settle through jetgate.
func TestRESTRefusesBodiesThatAreNotJSON(t *testing.T) {
	a := startApp(t, nil)
	c := newREST(t, a)
	s := stream(t, a)
	c.post(publishPath, `{"subject":"orders.new","data":"AQ=="}`).ok(t) // so a fetch would lease something

	const publish = `{"subject":"orders.new","data":"AQ=="}`
	for _, tt := range []struct {
		name         string
		path, body   string
		contentTypes []string
	}{
		{"text/plain", publishPath, publish, []string{"text/plain"}},
		{"text/plain with charset", publishPath, publish, []string{"text/plain; charset=utf-8"}},
		{"form", publishPath, "subject=orders.new", []string{"application/x-www-form-urlencoded"}},
		{"multipart form", publishPath, "--x\r\n\r\n" + publish + "\r\n--x--\r\n", []string{"multipart/form-data; boundary=x"}},
		{"no Content-Type", publishPath, publish, nil},
		{"no Content-Type and no body", consumerPath + ":fetch", "", nil},
		{"form without a body", consumerPath + ":fetch", "", []string{"application/x-www-form-urlencoded"}},
		{"text/json", publishPath, publish, []string{"text/json"}},
		{"application/jsonp", publishPath, publish, []string{"application/jsonp"}},
		{"bare +json", publishPath, publish, []string{"application/+json"}},
		{"malformed", publishPath, publish, []string{"application/json; charset"}},
		{"JSON and text/plain", publishPath, publish, []string{"application/json", "text/plain"}},
		{"ack as text/plain", consumerPath + ":ack", `{"tokens":["x"]}`, []string{"text/plain"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := c.request(http.MethodPost, tt.path, tt.body, tt.contentTypes...)
			if r.status != http.StatusUnsupportedMediaType {
				t.Fatalf("status %d, body %s; want 415", r.status, r.raw)
			}
			if r.reason() != "UNSUPPORTED_MEDIA_TYPE" {
				t.Errorf("reason %q; want UNSUPPORTED_MEDIA_TYPE (body %s)", r.reason(), r.raw)
			}
			if code, _ := r.body["code"].(float64); code != 3 {
				t.Errorf("code %v; want 3 (INVALID_ARGUMENT), as the other gateway errors: %s", r.body["code"], r.raw)
			}
			if msg, _ := r.body["message"].(string); !strings.Contains(msg, "application/json") {
				t.Errorf("message %q does not say what to send", msg)
			}
		})
	}
	if n := msgCount(t, s); n != 1 {
		t.Errorf("the stream holds %d messages; want only the one published as JSON", n)
	}
	info := c.get(consumerPath).ok(t)
	if info.body["gatewayLeases"] != "0" {
		t.Errorf("gatewayLeases %v; want \"0\": no refused fetch leased anything", info.body["gatewayLeases"])
	}
}

func TestRESTAcceptsJSONContentTypes(t *testing.T) {
	a := startApp(t, nil)
	c := newREST(t, a)
	for _, ct := range []string{
		"application/json",
		"application/json; charset=utf-8",
		"Application/JSON; Charset=UTF-8",
		"application/merge-patch+json",
		"application/vnd.jetgate.v1+json; charset=utf-8",
	} {
		t.Run(ct, func(t *testing.T) {
			c.request(http.MethodPost, publishPath, `{"subject":"orders.new","data":"AQ=="}`, ct).ok(t)
		})
	}
	if n := msgCount(t, stream(t, a)); n != 5 {
		t.Errorf("the stream holds %d messages; want 5", n)
	}
}

// Requests without a body need no Content-Type.
func TestRESTWithoutBodyNeedsNoContentType(t *testing.T) {
	c := newREST(t, startApp(t, nil))
	for _, path := range []string{consumerPath, "/healthz", "/readyz", "/openapi.json"} {
		c.request(http.MethodGet, path, "").ok(t)
	}
	c.request(http.MethodGet, consumerPath, "", "text/plain").ok(t)
	resp, err := c.hc.Get(c.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /metrics: %d; want 200", resp.StatusCode)
	}
}
