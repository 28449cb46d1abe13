package replica_test

import (
	"context"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// BenchmarkFetchOneAndAck is a Fetch(1) with a message ready and its Ack,
// through the core, tracing off: its allocs/op are what tracing must not
// raise (go test -bench FetchOne -benchmem ./internal/replica). The in-process
// NATS server's allocations count too, the same with tracing or without.
func BenchmarkFetchOneAndAck(b *testing.B) { benchFetchAndSettle(b, 1, lease.OpAck, nil) }

// BenchmarkFetchBatchAndAck is the bench's grpc mode through the core: a
// Fetch of 100 and one Ack of their tokens; an op is one message.
func BenchmarkFetchBatchAndAck(b *testing.B) { benchFetchAndSettle(b, 100, lease.OpAck, nil) }

// BenchmarkFetchBatchAndTerm is a Fetch of 100 and one Term of their tokens,
// the consumer with no dead letter, with one, and with one with on_term:
// what a Term's record costs (an op is one message; the worker's copies
// run meanwhile).
func BenchmarkFetchBatchAndTerm(b *testing.B) {
	for _, c := range []struct {
		name string
		dl   *consumer.DeadLetter
	}{
		{"no_dead_letter", nil},
		{"dead_letter", &consumer.DeadLetter{Subject: "dlq.billing"}},
		{"on_term", &consumer.DeadLetter{Subject: "dlq.billing", OnTerm: true}},
	} {
		b.Run(c.name, func(b *testing.B) { benchFetchAndSettle(b, 100, lease.OpTerm, c.dl) })
	}
}

func benchFetchAndSettle(b *testing.B, batch int, op lease.Op, dl *consumer.DeadLetter) {
	ns := natstest.Start(b)
	nc := natstest.Connect(b, ns)
	natstest.Stream(b, nc, "ORDERS", "orders.>")
	natstest.Stream(b, nc, "DLQ", "dlq.>")
	r, err := replica.New(context.Background(), replica.Options{
		Conn: natstest.Connect(b, ns), Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing", AckWait: time.Minute, DeadLetter: dl}},
		Keys: token.RandomKeyring(),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(r.Close)
	data := make([]byte, 1024)
	for range b.N {
		if err := nc.Publish("orders.bench", data); err != nil {
			b.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for left := b.N; left > 0; {
		res, err := r.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: min(batch, left), Expires: time.Second})
		if err != nil || len(res.Messages) == 0 {
			b.Fatalf("fetch: %v %v", res, err)
		}
		left -= len(res.Messages)
		tokens := make([]string, len(res.Messages))
		for i, d := range res.Messages {
			tokens[i] = d.Token
		}
		out, err := r.Settle(ctx, settle.Request{Op: op, Stream: "ORDERS", Consumer: "billing", Tokens: tokens})
		if err != nil {
			b.Fatalf("%v: %v", op, err)
		}
		for _, o := range out {
			if o.Err != nil {
				b.Fatalf("%v: %v", op, o.Err)
			}
		}
	}
}
