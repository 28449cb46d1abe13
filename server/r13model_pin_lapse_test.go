package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// A caller whose pin lapsed (no pull carried it for priority_timeout) is
// told PIN_ID_MISMATCH with what may have happened. Before, the answer said
// "the priority group is pinned to another client" though nobody held the
// pin, and the caller, pulling without it as told, took it at once.
func TestALapsedPinIsToldAsSuch(t *testing.T) {
	o := newOperated(t, jetstream.ConsumerConfig{Durable: "lapse", PriorityGroups: []string{"jobs"},
		PriorityPolicy: jetstream.PriorityPolicyPinned, PinnedTTL: time.Second}, 1)
	c := o.replicas[0]
	o.publish(2)
	r, err := o.fetch(t, c, &jetgatev1.FetchRequest{Batch: 1, Expires: durationpb.New(2 * time.Second)})
	if err != nil || r.GetPinId() == "" {
		t.Fatalf("first Fetch: %v %v; want a message and a pin", r, err)
	}
	pin := r.GetPinId()
	natstest.Eventually(t, 10*time.Second, "the pin lapses", func() bool {
		g := o.info(o.name).PriorityGroups
		return len(g) == 1 && g[0].PinnedClientID == ""
	})
	_, err = o.fetch(t, c, &jetgatev1.FetchRequest{Batch: 1, PinId: pin})
	code, reason := codeAndReason(err)
	if code != codes.FailedPrecondition || reason != "PIN_ID_MISMATCH" {
		t.Fatalf("a Fetch with the lapsed pin: %v; want FAILED_PRECONDITION PIN_ID_MISMATCH", err)
	}
	if msg := err.Error(); strings.Contains(msg, "pinned to another client") || !strings.Contains(msg, "priority_timeout") {
		t.Errorf("a lapsed pin was told %q; want what may have happened, the timeout among it, and no other client said to hold the pin", msg)
	}
	r, err = o.fetch(t, c, &jetgatev1.FetchRequest{Batch: 1, Expires: durationpb.New(2 * time.Second)})
	if err != nil || len(r.GetMessages()) != 1 || r.GetPinId() == "" {
		t.Fatalf("a Fetch without a pin, as told: %v %v; want the message and a new pin", r, err)
	}
}
