package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
)

// A consumer just bound holds what it pulls until the roster holds its
// replica as serving it (HoldUntilCounted), so that a peer telling of a
// reset waits for it: a Fetch meanwhile hands out nothing (its caller,
// gone, leaves the message to the next Fetch), and once counted the next
// Fetch gets the message.
func TestAConsumerHoldsItsDeliveriesUntilItsReplicaIsCounted(t *testing.T) {
	e := start(t, consumer.Config{})
	counted := e.c.HoldUntilCounted()
	seq := e.publish("orders.1", "m")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	res, err := e.c.Fetch(ctx, consumer.FetchRequest{Batch: 1, Expires: 2 * time.Second})
	cancel()
	if err == nil {
		t.Fatalf("a Fetch before the replica was counted returned %d messages; want it held until its caller left", len(res.Messages))
	}
	counted()
	res = e.fetch(consumer.FetchRequest{Batch: 1, Expires: 2 * time.Second})
	if len(res.Messages) != 1 || res.Messages[0].Meta.StreamSeq != seq {
		t.Fatalf("once counted, a Fetch got %d messages; want the one held", len(res.Messages))
	}
}
