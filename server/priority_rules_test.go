package server_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// A replica that holds none of the leases still says why its Fetch got
// nothing: the consumer has exactly max_ack_pending messages out, through
// another replica, with more waiting.
func TestAnotherReplicaSaysMaxAckPendingAtExactlyTheLimit(t *testing.T) {
	h := newHarness(t, maxAckPending(2))
	_, b, _ := h.startGateway()
	h.publish(3)
	if got := h.fetch(h.cons, consumer, 2, time.Second).GetMessages(); len(got) != 2 {
		t.Fatalf("through A: %d messages; want 2", len(got))
	}
	natstest.Eventually(t, 5*time.Second, "B says MAX_ACK_PENDING", func() bool {
		r := h.fetch(b, consumer, 1, 0)
		if len(r.GetMessages()) != 0 {
			t.Fatalf("B delivered past max_ack_pending: %v", r.GetMessages())
		}
		return r.GetEmptyReason() == jetgatev1.EmptyReason_EMPTY_REASON_MAX_ACK_PENDING
	})
}

// Unpin is for a consumer of the pinned_client policy: any other is
// refused INVALID_ARGUMENT, and nothing is asked of the server.
func TestUnpinOfAConsumerThatIsNotPinnedIsInvalid(t *testing.T) {
	o := newOperated(t, jetstream.ConsumerConfig{Durable: "prio", PriorityGroups: []string{"main"},
		PriorityPolicy: jetstream.PriorityPolicyOverflow}, 1)
	tests := []struct {
		name     string
		c        jetgatev1.ConsumerServiceClient
		consumer string
	}{
		{"overflow", o.replicas[0], "prio"},
		{"no priority groups", o.harness.cons, consumer},
	}
	asked, err := o.nc.SubscribeSync("$JS.API.CONSUMER.UNPIN.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := o.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.c.Unpin(o.ctx(), &jetgatev1.UnpinRequest{Stream: stream, Consumer: tt.consumer})
			if code, reason := codeAndReason(err); code != codes.InvalidArgument || reason != "INVALID_ARGUMENT" {
				t.Fatalf("Unpin: %v; want INVALID_ARGUMENT", err)
			}
		})
	}
	if m, err := asked.NextMsg(100 * time.Millisecond); err == nil {
		t.Fatalf("the server was asked to unpin: %s", m.Subject)
	}
}
