package push_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/push"
)

// Each event of a CloudEvents batch carries its message's trace context
// as the distributed tracing extension's traceparent and tracestate, as
// the json form carries it in its headers: a receiver (Dapr's bulk
// subscribe) continues each message's trace. The batch's own traceparent
// header is one request's, not each message's. A ce-traceparent the
// publisher set stands.
func TestACloudEventsBatchCarriesEachMessagesTraceContext(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	pc := batched(rc.URL, push.Batch{MaxMessages: 3, MaxWait: 10 * time.Second})
	pc.Format = push.FormatCloudEvents
	e.replica(consumerCfg(), pc)
	const (
		first  = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		second = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
		own    = "00-11111111111111111111111111111111-2222222222222222-01"
	)
	e.publish("orders.new", "a", nats.Header{"traceparent": {first}, "tracestate": {"k=v"}})
	e.publish("orders.new", "b", nats.Header{"Traceparent": {second}})
	e.publish("orders.new", "c", nats.Header{"traceparent": {second}, "ce-traceparent": {own}})
	var evs []map[string]any
	if p := rc.next(t, 10*time.Second); json.Unmarshal(p.body, &evs) != nil || len(evs) != 3 {
		t.Fatalf("not a batch of three events: %q", p.body)
	}
	for i, want := range []map[string]any{{"traceparent": first, "tracestate": "k=v"}, {"traceparent": second}, {"traceparent": own}} {
		for _, k := range []string{"traceparent", "tracestate"} {
			if evs[i][k] != want[k] {
				t.Errorf("event %d: %s %v, want %v", i, k, evs[i][k], want[k])
			}
		}
	}
	e.drained(5 * time.Second)
}
