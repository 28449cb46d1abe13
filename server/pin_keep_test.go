package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// A pinned Consume stream keeps its pin while its room is taken and it
// pulls nothing, longer than priority_timeout: a job longer than that lost
// the stream its pin (a reviewer's finding), another caller took it, and
// the stream ended PIN_ID_MISMATCH as its lease was acked. The server
// renews a pin as a pull carrying it arrives; the stream sends one that can
// take nothing.
func TestAFullPinnedStreamKeepsItsPin(t *testing.T) {
	o := newOperated(t, jetstream.ConsumerConfig{Durable: "pinkeep", AckWait: 30 * time.Second,
		PriorityGroups: []string{"jobs"}, PriorityPolicy: jetstream.PriorityPolicyPinned, PinnedTTL: 2 * time.Second}, 2)
	a, b := o.replicas[0], o.replicas[1]
	ctx, cancel := context.WithCancel(o.ctx())
	defer cancel()
	st, err := a.Consume(ctx, &jetgatev1.ConsumeRequest{Stream: stream, Consumer: "pinkeep", Group: "jobs", MaxMessages: 1, Heartbeat: durationpb.New(500 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	o.publish(3)
	var held *jetgatev1.Message
	for held == nil {
		r, err := st.Recv()
		if err != nil {
			t.Fatalf("the stream ended before its first message: %v", err)
		}
		if len(r.GetMessages()) == 1 {
			held = r.GetMessages()[0]
		}
	}
	start := time.Now()
	natstest.Eventually(t, 30*time.Second, "three priority_timeouts holding the one lease its room takes", func() bool {
		return time.Since(start) > 6*time.Second
	})
	r, err := o.fetch(t, b, &jetgatev1.FetchRequest{Group: "jobs", Batch: 1, Expires: durationpb.New(time.Second)})
	if err != nil || len(r.GetMessages()) != 0 || r.GetEmptyReason() != jetgatev1.EmptyReason_EMPTY_REASON_PINNED {
		t.Fatalf("another caller's Fetch while the stream held the pin: %v %v; want nothing, PINNED", r, err)
	}
	if _, err := a.Ack(o.ctx(), &jetgatev1.AckRequest{Stream: stream, Consumer: "pinkeep", Tokens: []string{held.GetToken()}}); err != nil {
		t.Fatal(err)
	}
	for {
		r, err := st.Recv()
		if err != nil {
			t.Fatalf("the stream ended after its ack, instead of getting the next message: %v", err)
		}
		if len(r.GetMessages()) == 1 {
			return
		}
	}
}
