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

// Every settle that ends a lease gives a Consume stream its credit back, a
// Nak and a Term as well as an Ack: with a credit of one, the next message
// comes as soon as the lease is settled, not when its deadline passes
// (ack_wait is a minute here, and the wait for the next message ten
// seconds).
func TestConsumeGetsItsCreditBackOnEverySettle(t *testing.T) {
	for _, tt := range []struct {
		name string
		op   lease.Op
		args settle.Args
	}{
		{"ack", lease.OpAck, settle.Args{}},
		{"nak", lease.OpNak, settle.Args{}},
		{"nak with a delay", lease.OpNak, settle.Args{Delay: time.Hour}},
		{"term", lease.OpTerm, settle.Args{Reason: "bad"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t, consumer.Config{AckWait: time.Minute, MaxAckPending: 1024})
			e.publish("orders.1", "first")
			second := e.publish("orders.2", "second")
			sent := make(chan []*consumer.Delivery, 16)
			consumeInto(t, e, consumer.ConsumeRequest{MaxMessages: 1, Heartbeat: time.Hour}, sent, nil)
			held := receiveBatch(t, sent, "the first message")
			if len(held) != 1 {
				t.Fatalf("a stream with max_messages 1 was sent %d messages", len(held))
			}
			cl, err := e.keys.Open(held[0].Token, stream, name, "")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), within)
			defer cancel()
			if o := e.c.Settle(ctx, tt.op, []token.Claims{cl}, tt.args)[0]; o.Err != nil {
				t.Fatalf("%s: %v", tt.op, o.Err)
			}
			settled := time.Now()
			next := receiveBatch(t, sent, "message after the "+tt.name+" (its credit did not come back)")
			if len(next) != 1 {
				t.Fatalf("after the %s the stream was sent %d messages, want 1", tt.name, len(next))
			}
			// Without a delay a Nak's message may come straight back;
			// otherwise the next one comes.
			if d := next[0].Meta; d.StreamSeq != second && !(tt.op == lease.OpNak && tt.args.Delay == 0 && d.StreamSeq == cl.StreamSeq) {
				t.Fatalf("after the %s the stream was sent seq %d delivery %d", tt.name, d.StreamSeq, d.Delivered)
			}
			t.Logf("next message %v after the %s", time.Since(settled).Round(time.Millisecond), tt.name)
		})
	}
}
