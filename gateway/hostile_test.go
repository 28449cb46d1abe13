package gateway_test

import (
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/nats-io/nats.go"
)

// Paths and headers a proxy or a client may send oddly: an escaped slash is
// no route (a proxy's path rules see it as sent), two Authorization headers
// are a bad request, the probes take GET and HEAD only (405 with Allow
// otherwise), and HEAD of a GET route is served.
func TestRESTOddPathsAndHeaders(t *testing.T) {
	a := startApp(t, nil)
	c := newREST(t, a)
	nc, err := nats.Connect(a.NATS)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.Publish("orders.x", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/streams/ORDERS%2Fconsumers%2Fbilling:fetch", "/v1/streams/ORDERS%2fconsumers%2fbilling:fetch"} {
		if r := c.request("POST", path, `{"expires":"0s"}`, "application/json"); r.status != http.StatusNotFound || r.reason() != "ROUTE_NOT_FOUND" {
			t.Fatalf("POST %s: %d %s; want 404", path, r.status, r.raw)
		}
	}
	if r := c.post(consumerPath+":fetch", `{"expires":"1s"}`).ok(t); len(r.body["messages"].([]any)) != 1 {
		t.Fatalf("the message was leased by the escaped path: %s", r.raw)
	}

	req, _ := http.NewRequest(http.MethodGet, c.base+consumerPath, nil)
	req.Header.Add("Authorization", "Bearer a")
	req.Header.Add("Authorization", "Bearer b")
	if r := c.send(req); r.status != http.StatusBadRequest {
		t.Fatalf("two Authorization headers: %d %s", r.status, r.raw)
	}

	for _, path := range []string{"/healthz", "/readyz", "/openapi.json"} {
		r := c.request("POST", path, `{}`, "application/json")
		if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "GET, HEAD" {
			t.Errorf("POST %s: %d Allow %q; want 405 GET, HEAD", path, r.status, r.header.Get("Allow"))
		}
	}
	for _, path := range []string{"/healthz", consumerPath} {
		resp, err := c.hc.Head(c.base + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("HEAD %s: %d, want 200", path, resp.StatusCode)
		}
	}
}

// REST delivers a message whose subject and header are not UTF-8 with its
// exact bytes, and the message after it too.
func TestRESTFetchesAMessageThatIsNotUTF8(t *testing.T) {
	a := startApp(t, nil)
	c := newREST(t, a)
	nc, err := nats.Connect(a.NATS)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.PublishMsg(&nats.Msg{Subject: "orders.\xff", Header: nats.Header{"X-B": {"\xfd"}}, Data: []byte("bad")}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish("orders.good", []byte("good")); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	var ms []any
	for len(ms) < 2 {
		r := c.post(consumerPath+":fetch", `{"batch":2,"expires":"1s"}`).ok(t)
		more := r.body["messages"].([]any)
		if len(more) == 0 {
			t.Fatalf("fetched %d messages, then none", len(ms))
		}
		ms = append(ms, more...)
	}
	raw, _ := ms[0].(map[string]any)["raw"].(map[string]any)
	if raw["subject"] != base64.StdEncoding.EncodeToString([]byte("orders.\xff")) || ms[0].(map[string]any)["subject"] != "orders.\uFFFD" {
		t.Fatalf("first message %v", ms[0])
	}
	if _, ok := ms[1].(map[string]any)["raw"]; ok {
		t.Fatalf("a UTF-8 message has a raw form: %v", ms[1])
	}
}
