package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// A Consume stream's lease that its caller extends with Extend (not the
// stream's auto_extend) keeps the stream's credit until the new deadline:
// the stream does not pull past max_messages at the old one.
func TestConsumeKeepsTheCreditOfALeaseItsCallerExtended(t *testing.T) {
	e := start(t, consumer.Config{AckWait: 2 * time.Second, MaxAckPending: 100})
	e.publish("orders.1", "first")
	e.publish("orders.2", "second")
	sent := make(chan []*consumer.Delivery, 4)
	consumeInto(t, e, consumer.ConsumeRequest{MaxMessages: 1, Heartbeat: time.Hour}, sent, nil)
	first := receiveBatch(t, sent, "the first message")[0]
	cl, err := e.keys.Open(first.Token, stream, name, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	<-time.After(time.Until(first.Deadline.Add(-time.Second))) // a lease's clock, not a wait for a condition
	o := e.c.Settle(ctx, lease.OpExtend, []token.Claims{cl}, settle.Args{})[0]
	if o.Err != nil {
		t.Fatalf("extend: %v", o.Err)
	}
	// Past the first deadline, well before the extended one: the stream
	// still holds its one lease.
	select {
	case ds := <-sent:
		t.Fatalf("the stream took %d more messages (seq %d delivered %d) at the lease's old deadline %v, though its caller extended it to %v", len(ds), ds[0].Meta.StreamSeq, ds[0].Meta.Delivered, first.Deadline, o.Deadline)
	case <-time.After(time.Until(first.Deadline.Add(500 * time.Millisecond))):
	}
}
