package server_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// emptyUntil fetches until an empty Fetch says want (the server's view a
// replica reasons from is at most a second old), failing at the deadline.
func (o *operated) emptyUntil(t *testing.T, c jetgatev1.ConsumerServiceClient, req *jetgatev1.FetchRequest, want jetgatev1.EmptyReason) {
	t.Helper()
	var last jetgatev1.EmptyReason
	natstest.Eventually(t, 5*time.Second, want.String(), func() bool {
		r, err := o.fetch(t, c, req)
		if err != nil || len(r.GetMessages()) != 0 {
			t.Fatalf("%v: %v, %d messages; want none", req, err, len(r.GetMessages()))
		}
		last = r.GetEmptyReason()
		return last == want
	})
}

// A caller without the pin of a pinned group is told so, not that there was
// nothing: the server's info shows the group pinned.
func TestEmptyFetchWithoutThePinSaysPinned(t *testing.T) {
	o := newOperated(t, jetstream.ConsumerConfig{Durable: "pinned", PriorityGroups: []string{"main"},
		PriorityPolicy: jetstream.PriorityPolicyPinned, PinnedTTL: time.Minute}, 2)
	a, b := o.replicas[0], o.replicas[1]
	o.publish(4)
	first, err := o.fetch(t, a, &jetgatev1.FetchRequest{Batch: 1, Expires: durationpb.New(2 * time.Second)})
	if err != nil || first.GetPinId() == "" {
		t.Fatalf("first Fetch: %v %v; want a pin", first, err)
	}
	o.emptyUntil(t, b, &jetgatev1.FetchRequest{Batch: 1, Expires: durationpb.New(100 * time.Millisecond)}, jetgatev1.EmptyReason_EMPTY_REASON_PINNED)
	o.emptyUntil(t, a, &jetgatev1.FetchRequest{Batch: 1, Expires: durationpb.New(0)}, jetgatev1.EmptyReason_EMPTY_REASON_PINNED)
	// Unpinned, nothing left to deliver to the pin holder: nothing, not pinned.
	r, err := o.fetch(t, a, &jetgatev1.FetchRequest{Batch: 10, PinId: first.GetPinId()})
	if err != nil || len(r.GetMessages()) != 3 {
		t.Fatalf("with the pin: %v, %d messages; want 3", err, len(r.GetMessages()))
	}
	if _, err := b.Unpin(o.ctx(), &jetgatev1.UnpinRequest{Stream: stream, Consumer: "pinned"}); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 5*time.Second, "unpinned", func() bool { return o.info("pinned").PriorityGroups[0].PinnedClientID == "" })
	o.emptyUntil(t, b, &jetgatev1.FetchRequest{Batch: 1, Expires: durationpb.New(0)}, jetgatev1.EmptyReason_EMPTY_REASON_NO_MESSAGES)
}

// An overflow Fetch below its thresholds (5 pending, min_pending 100) is
// told so; with nothing pending it is NO_MESSAGES.
func TestEmptyOverflowFetchBelowThresholdsSaysSo(t *testing.T) {
	o := newOperated(t, jetstream.ConsumerConfig{Durable: "prio", PriorityGroups: []string{"main"},
		PriorityPolicy: jetstream.PriorityPolicyOverflow}, 1)
	c := o.replicas[0]
	o.emptyUntil(t, c, &jetgatev1.FetchRequest{MinPending: 100, Expires: durationpb.New(0)}, jetgatev1.EmptyReason_EMPTY_REASON_NO_MESSAGES)
	o.publish(5)
	natstest.Eventually(t, 5*time.Second, "5 pending", func() bool { return o.info("prio").NumPending == 5 })
	o.emptyUntil(t, c, &jetgatev1.FetchRequest{MinPending: 100, Batch: 50, Expires: durationpb.New(100 * time.Millisecond)},
		jetgatev1.EmptyReason_EMPTY_REASON_BELOW_MIN_PENDING)
	o.emptyUntil(t, c, &jetgatev1.FetchRequest{MinAckPending: 3, Expires: durationpb.New(0)},
		jetgatev1.EmptyReason_EMPTY_REASON_BELOW_MIN_PENDING)
}

// The replica that handed a pin out says PINNED to the next caller without
// it at once, not after its next info: one asked just before the pin was
// given (as the first pull of a replica that knew of no delivery asks one)
// showed the group unpinned, and a caller was told NO_MESSAGES (a client
// library's test saw it in CI).
func TestTheReplicaThatGaveThePinSaysPinnedAtOnce(t *testing.T) {
	o := newOperated(t, jetstream.ConsumerConfig{Durable: "pinned", PriorityGroups: []string{"main"},
		PriorityPolicy: jetstream.PriorityPolicyPinned, PinnedTTL: time.Minute}, 1)
	a := o.replicas[0]
	o.publish(2)
	first, err := o.fetch(t, a, &jetgatev1.FetchRequest{Batch: 1, Expires: durationpb.New(2 * time.Second)})
	if err != nil || first.GetPinId() == "" {
		t.Fatalf("first Fetch: %v %v; want a pin", first, err)
	}
	r, err := o.fetch(t, a, &jetgatev1.FetchRequest{Batch: 1, Expires: durationpb.New(300 * time.Millisecond)})
	if err != nil || len(r.GetMessages()) != 0 || r.GetEmptyReason() != jetgatev1.EmptyReason_EMPTY_REASON_PINNED {
		t.Fatalf("a Fetch without the pin right after: %v, %d messages, %v; want none, PINNED", err, len(r.GetMessages()), r.GetEmptyReason())
	}
}
