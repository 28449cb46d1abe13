package gateway_test

import (
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/natstest"
)

// Over REST too, six messages of 900 KB come out over several Fetches, each
// within what the REST side's own gRPC client accepts, and none is left to
// come back after ack_wait.
func TestRESTFetchReturnsWhatFitsAndKeepsTheRest(t *testing.T) {
	a := startApp(t, nil)
	c := newREST(t, a)
	js := publishBig(t, a, 6)
	got := 0
	for fetches := 0; got < 6; fetches++ {
		if fetches == 6 {
			t.Fatalf("%d of 6 messages after %d fetches", got, fetches)
		}
		f := c.post(consumerPath+":fetch", `{"batch":6,"expires":"1s"}`)
		if f.status != 200 {
			t.Fatalf("fetch %d: status %d %.200s", fetches, f.status, f.raw)
		}
		msgs := list(t, f.body["messages"], "messages")
		if len(msgs) == 0 || len(msgs) == 6 {
			t.Fatalf("fetch %d returned %d messages; want some, and never all six at once", fetches, len(msgs))
		}
		noFailures(t, c.post(consumerPath+":ack", map[string]any{"tokens": tokensOf(t, msgs)}), "ack")
		got += len(msgs)
	}
	cons, err := js.Consumer(t.Context(), "ORDERS", "billing")
	if err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 5*time.Second, "all acked", func() bool {
		ci, err := cons.Info(t.Context())
		return err == nil && ci.NumAckPending == 0 && ci.NumPending == 0 && ci.NumRedelivered == 0
	})
}
