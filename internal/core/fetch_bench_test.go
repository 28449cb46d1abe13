package core_test

import (
	"context"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/core"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// BenchmarkFetchOneAndAck is a Fetch(1) with a message ready and its Ack,
// through the core, tracing off: its allocs/op are what tracing must not
// raise (go test -bench FetchOne -benchmem ./internal/core). The in-process
// NATS server's allocations count too, the same with tracing or without.
func BenchmarkFetchOneAndAck(b *testing.B) {
	ns := natstest.Start(b)
	nc := natstest.Connect(b, ns)
	natstest.Stream(b, nc, "ORDERS", "orders.>")
	r, err := core.New(context.Background(), core.Options{
		Conn: natstest.Connect(b, ns), Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing", AckWait: time.Minute}},
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
	for range b.N {
		res, err := r.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: time.Second})
		if err != nil || len(res.Messages) != 1 {
			b.Fatalf("fetch: %v %v", res, err)
		}
		out, err := r.Settle(ctx, settle.Request{Op: lease.OpAck, Stream: "ORDERS", Consumer: "billing", Tokens: []string{res.Messages[0].Token}})
		if err != nil || out[0].Err != nil {
			b.Fatalf("ack: %v %v", out, err)
		}
	}
}
