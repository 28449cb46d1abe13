package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Over REST as over gRPC, a Nats- header is refused before anything is
// stored: on a stream that allows rollups, Nats-Rollup: all would purge it.
func TestRESTRefusesReservedHeaders(t *testing.T) {
	a := startApp(t, nil)
	c := newREST(t, a)
	s := stream(t, a)
	cfg := s.CachedInfo().Config
	cfg.AllowRollup = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := jetStream(t, a).UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		c.post(publishPath, `{"subject":"orders.new","data":"AQ=="}`).ok(t)
	}

	r := c.post(publishPath, `{"subject":"orders.new","data":"AQ==","headers":{"Nats-Rollup":{"values":["all"]}}}`)
	if n := msgCount(t, s); n != 2 {
		t.Errorf("the stream holds %d messages; want the 2 it had", n)
	}
	if r.status != http.StatusBadRequest || r.reason() != "HEADER_RESERVED" {
		t.Fatalf("status %d, body %s; want 400 HEADER_RESERVED", r.status, r.raw)
	}
	if msg, _ := r.body["message"].(string); !strings.Contains(msg, `"Nats-Rollup"`) {
		t.Errorf("message %q does not name the header", msg)
	}
}
