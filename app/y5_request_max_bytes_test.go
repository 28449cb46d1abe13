package app

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/authtest"
)

// Over REST, GetConsumer shows a consumer's maxRequestMaxBytes, the limit a
// Fetch refused MESSAGE_TOO_LARGE names: one given it by nats.go, one asked at a
// create and one changed by an update; a negative one is 400
// INVALID_ARGUMENT naming it.
func TestRESTShowsMaxRequestMaxBytes(t *testing.T) {
	file := writeConfig(t, fmt.Sprintf(`
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers: [{stream: ORDERS, name: billing}]
admin: {streams: [ORDERS], consumers: ["team-*"]}
auth:
  api_keys:
    - {principal: team-a, sha256: %s}
  grants:
    - {principal: team-a, stream: ORDERS, consumers: ["team-a-*"], actions: [admin, read]}
    - {principal: team-a, stream: ORDERS, consumers: [billing], actions: [read]}
`, authtest.KeyHash("team-a-key")))
	p := start(t, fileOptions(t, file))
	nc, err := nats.Connect(p.NATS)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// An operator sets it on the file's consumer, as `nats consumer edit`
	// would.
	c, err := js.Consumer(ctxT(t), "ORDERS", "billing")
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.CachedInfo().Config
	cfg.MaxRequestMaxBytes = 4096
	if _, err := js.UpdateConsumer(ctxT(t), "ORDERS", cfg); err != nil {
		t.Fatal(err)
	}
	shown := func(name string) any {
		t.Helper()
		code, body := restJSON(t, p, "team-a-key", http.MethodGet, "/v1/streams/ORDERS/consumers/"+name, "")
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %v", name, code, body)
		}
		cfg, _ := body["config"].(map[string]any)
		return cfg["maxRequestMaxBytes"]
	}
	if v := shown("billing"); v != "4096" {
		t.Errorf("GET of a consumer given max_request_max_bytes 4096 by nats.go: maxRequestMaxBytes %v", v)
	}

	if code, body := restJSON(t, p, "team-a-key", http.MethodPost, "/v1/streams/ORDERS/consumers",
		`{"config": {"durableName": "team-a-mb", "maxRequestMaxBytes": "2048"}}`); code != http.StatusOK {
		t.Fatalf("create with maxRequestMaxBytes 2048: %d %v", code, body)
	}
	if v := shown("team-a-mb"); v != "2048" {
		t.Errorf("GET after a create with maxRequestMaxBytes 2048: %v", v)
	}
	if code, reason, msg := patchConsumer(t, p, "team-a-mb", `{"config": {"maxRequestMaxBytes": "8192"}, "updateMask": "maxRequestMaxBytes"}`); code != http.StatusOK {
		t.Fatalf("PATCH maxRequestMaxBytes 8192: %d %s %q", code, reason, msg)
	}
	if v := shown("team-a-mb"); v != "8192" {
		t.Errorf("GET after a PATCH of maxRequestMaxBytes to 8192: %v", v)
	}
	code, reason, msg := patchConsumer(t, p, "team-a-mb", `{"config": {"maxRequestMaxBytes": "-1"}, "updateMask": "maxRequestMaxBytes"}`)
	if code != http.StatusBadRequest || reason != "INVALID_ARGUMENT" || !strings.Contains(msg, "max_request_max_bytes") {
		t.Errorf("PATCH maxRequestMaxBytes -1: %d %s %q; want 400 INVALID_ARGUMENT naming max_request_max_bytes", code, reason, msg)
	}
	if v := shown("team-a-mb"); v != "8192" {
		t.Errorf("a refused PATCH changed maxRequestMaxBytes to %v", v)
	}
}
