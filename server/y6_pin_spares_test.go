package server_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// The rest of a pinned Fetch that did not fit its response is kept for the
// pin (TestTheRestOfAPinnedFetchIsForThePin). Once that pin is gone, no
// Fetch names it: the rest goes back to the server at once, for the new
// pin. Before, it was nak'ed only a second before its leases ended, and the
// new pinned caller waited about ack_wait (30s here) for those messages.

// pinnedSpares makes a pinned consumer with ack_wait 30s and the rest of a
// first Fetch, through the first replica, kept for its pin, which it
// returns with the messages seen.
func pinnedSpares(t *testing.T, ttl time.Duration, replicas int) (*operated, jetgatev1.ConsumerServiceClient, string, int) {
	t.Helper()
	o := newOperated(t, jetstream.ConsumerConfig{Durable: "pinned", AckWait: 30 * time.Second, PriorityGroups: []string{"main"},
		PriorityPolicy: jetstream.PriorityPolicyPinned, PinnedTTL: ttl}, replicas)
	publishBinaryHeaders(o.harness, 50)
	c := o.replicas[0]
	first, err := o.fetch(t, c, &jetgatev1.FetchRequest{Batch: 50, Expires: durationpb.New(time.Second)})
	if err != nil || first.GetPinId() == "" || len(first.GetMessages()) == 0 || len(first.GetMessages()) == 50 {
		t.Fatalf("first Fetch: %d messages, pin %q, %v; want some of 50 and a pin", len(first.GetMessages()), first.GetPinId(), err)
	}
	return o, c, first.GetPinId(), len(first.GetMessages())
}

// fetchTheRest has the new pin's holder, pin (or "" to take the pin), Fetch
// with a wait of 5s, far under ack_wait, until it has seen all 50 messages.
func fetchTheRest(t *testing.T, o *operated, c jetgatev1.ConsumerServiceClient, old, pin string, seen int) {
	t.Helper()
	for fetches := 0; seen < 50; fetches++ {
		if fetches == 10 {
			t.Fatalf("%d of 50 messages in 10 Fetches after the pin %q went", seen, old)
		}
		r, err := o.fetch(t, c, &jetgatev1.FetchRequest{Batch: 50, PinId: pin, Expires: durationpb.New(5 * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.GetMessages()) == 0 {
			t.Fatalf("a Fetch of the new pin waited 5s for the %d messages the old pin left and got none (%v)", 50-seen, r.GetEmptyReason())
		}
		if pin = r.GetPinId(); pin == "" || pin == old {
			t.Fatalf("a Fetch after the pin went answered pin %q (the old one: %q)", pin, old)
		}
		seen += len(r.GetMessages())
	}
}

func TestTheRestOfAPinnedFetchGoesToTheNextPinAfterAnUnpin(t *testing.T) {
	o, c, old, seen := pinnedSpares(t, time.Minute, 1)
	if _, err := c.Unpin(o.ctx(), &jetgatev1.UnpinRequest{Stream: stream, Consumer: "pinned"}); err != nil {
		t.Fatalf("Unpin: %v", err)
	}
	fetchTheRest(t, o, c, old, "", seen)
}

// A pin that lapsed (priority_timeout) is learnt from the new pin's first
// delivery, here a message published after the first Fetch.
func TestTheRestOfAPinnedFetchGoesToTheNextPinAfterALapse(t *testing.T) {
	o, c, old, seen := pinnedSpares(t, time.Second, 1)
	fetchTheRest(t, o, c, old, newPin(t, o, c, old), seen)
}

// newPin publishes a message, and returns the pin that a Fetch through c
// without one takes with it, once the old pin is gone.
func newPin(t *testing.T, o *operated, c jetgatev1.ConsumerServiceClient, old string) string {
	t.Helper()
	if _, err := o.js.Publish(o.ctx(), "orders.new", []byte("after")); err != nil {
		t.Fatal(err)
	}
	r, err := o.fetch(t, c, &jetgatev1.FetchRequest{Batch: 1, Expires: durationpb.New(5 * time.Second)})
	if err != nil || len(r.GetMessages()) != 1 || r.GetPinId() == "" || r.GetPinId() == old {
		t.Fatalf("a Fetch without the pin once it went: %d messages, pin %q, %v; want the new message and a new pin", len(r.GetMessages()), r.GetPinId(), err)
	}
	return r.GetPinId()
}

// A replica that did not see the pin go (unpinned through another, the new
// pin given there) learns it from a pull of the old pin that the server
// refuses (423): here the old holder's Fetch asks for fewer bytes than any
// of its spares, so it pulls.
func TestTheRestOfAPinnedFetchGoesToTheNextPinOnAPinRefused(t *testing.T) {
	o, a, old, seen := pinnedSpares(t, time.Minute, 2)
	b := o.replicas[1]
	if _, err := b.Unpin(o.ctx(), &jetgatev1.UnpinRequest{Stream: stream, Consumer: "pinned"}); err != nil {
		t.Fatalf("Unpin: %v", err)
	}
	pin := newPin(t, o, b, old)
	_, err := o.fetch(t, a, &jetgatev1.FetchRequest{Batch: 50, PinId: old, MaxBytes: proto.Int64(1000)})
	if code, reason := codeAndReason(err); code != codes.FailedPrecondition || reason != "PIN_ID_MISMATCH" {
		t.Fatalf("a Fetch of the old pin: %v; want FAILED_PRECONDITION PIN_ID_MISMATCH", err)
	}
	fetchTheRest(t, o, b, old, pin, seen)
}
