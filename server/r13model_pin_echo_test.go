package server_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// DESIGN 10: the Fetch response carries pin_id, and the caller sends it
// with its next Fetch. A pinned caller that does so, through either
// replica, keeps its pin across a Fetch that found nothing. Before, the
// empty answer carried no pin ("pinId": ""), so the caller's next Fetch
// went without it and was told EMPTY_REASON_PINNED, locked out by its own
// pin for priority_timeout (a minute here, two by the server's default)
// while the group's messages waited; a Consume stream's heartbeats carry
// its pin.
func TestAPinnedCallerKeepsItsPinAcrossAnEmptyFetch(t *testing.T) {
	o := newOperated(t, jetstream.ConsumerConfig{Durable: "pinned", PriorityGroups: []string{"main"},
		PriorityPolicy: jetstream.PriorityPolicyPinned, PinnedTTL: time.Minute}, 2)
	a, b := o.replicas[0], o.replicas[1]
	pin := ""
	take := func(c jetgatev1.ConsumerServiceClient, expires time.Duration) *jetgatev1.FetchResponse {
		t.Helper()
		r, err := o.fetch(t, c, &jetgatev1.FetchRequest{Batch: 1, PinId: pin, Expires: durationpb.New(expires)})
		if err != nil {
			t.Fatalf("a Fetch with the pin the last answer carried (%q): %v", pin, err)
		}
		if len(r.GetMessages()) > 0 {
			ackEach(t, o.harness, c, o.name, r.GetMessages())
		}
		pin = r.GetPinId() // as the caller is told to
		return r
	}
	o.publish(1)
	if r := take(a, 2*time.Second); len(r.GetMessages()) != 1 || pin == "" {
		t.Fatalf("first Fetch: %v; want a message and a pin", r)
	}
	for _, c := range []jetgatev1.ConsumerServiceClient{a, b} {
		held := pin
		if r := take(c, 200*time.Millisecond); len(r.GetMessages()) != 0 || r.GetPinId() != held {
			t.Errorf("an empty Fetch with the pin: %d messages, %v, pin %q; want none, the pin %q", len(r.GetMessages()), r.GetEmptyReason(), r.GetPinId(), held)
		}
		o.publish(1)
		if r := take(c, 2*time.Second); len(r.GetMessages()) != 1 {
			t.Fatalf("the next Fetch with the pin the empty one carried: %d messages, %v; want the message", len(r.GetMessages()), r.GetEmptyReason())
		}
	}
}
