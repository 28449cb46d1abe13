package consumer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
)

// A Fetch whose consumer is at max_ack_pending answers with what a settle
// let through while its pull is still open, rather than at the pull's
// heartbeat, when the server would end it: the server has sent what it had.
// What the open pull receives after it goes to the next Fetch, as a first
// delivery.
func TestFetchAtMaxAckPendingAnswersWithWhatSettlesLetThrough(t *testing.T) {
	e := start(t, consumer.Config{AckWait: time.Minute, MaxAckPending: 4})
	for i := range 8 {
		e.publish(fmt.Sprintf("orders.%d", i), "m")
	}
	held := e.fetch(consumer.FetchRequest{Batch: 4}).Messages
	if len(held) != 4 {
		t.Fatalf("first fetch: %d messages, want the consumer's max_ack_pending, 4", len(held))
	}

	type answer struct {
		res     consumer.FetchResult
		err     error
		waiting int
	}
	answered := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		res, err := e.c.Fetch(ctx, consumer.FetchRequest{Batch: 4, Expires: time.Minute})
		answered <- answer{res, err, e.info().NumWaiting}
	}()
	natstest.Eventually(t, within, "the Fetch's pull waiting on the server", func() bool {
		return e.info().NumWaiting == 1
	})
	e.ack(held[0])
	var a answer
	select {
	case a = <-answered:
	case <-time.After(within):
		t.Fatal("the Fetch did not answer")
	}
	if a.err != nil {
		t.Fatal(a.err)
	}
	if len(a.res.Messages) != 1 {
		t.Fatalf("the Fetch answered %d messages, want the 1 a settle let through", len(a.res.Messages))
	}
	if a.waiting != 1 {
		t.Fatalf("the Fetch answered after its pull ended (%d pulls waiting): it waited for the heartbeat", a.waiting)
	}

	// The pull is still open: the next settle's message reaches it, and the
	// next Fetch takes it from there, first delivery and all.
	e.ack(held[1])
	natstest.Eventually(t, within, "the open pull's message held for the next Fetch", func() bool {
		return e.c.Orphans() == 1
	})
	next := e.fetch(consumer.FetchRequest{Batch: 4})
	if len(next.Messages) != 1 || next.Messages[0].Meta.Delivered != 1 {
		t.Fatalf("next fetch: %d messages (first delivered %v), want the open pull's message, delivered once",
			len(next.Messages), deliveredOf(next.Messages))
	}
}

func deliveredOf(ds []*consumer.Delivery) []uint64 {
	var n []uint64
	for _, d := range ds {
		n = append(n, d.Meta.Delivered)
	}
	return n
}
