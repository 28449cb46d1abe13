package reliability

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/deadletter"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

// Hostile traffic from other NATS clients, mixed into the usual: messages
// whose subject or headers are not UTF-8 (each must be delivered and acked
// like any other: lost 0), and forged dead letters naming subjects outside
// the consumer's stream, redriven all the while. Nothing is published
// outside the stream: no stream API call, nothing stored in another stream.
func TestFaultForgedDeadLettersAndPoisonMessages(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, stream, "orders.>")
	natstest.Stream(t, nc, "DLQ", "dlq.>")
	other := natstest.Stream(t, nc, "OTHER", "other.>")
	watch := natstest.Connect(t, ns)
	api, err := watch.SubscribeSync("$JS.API.STREAM.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	g := gwtest.Start(t, replica.Options{
		Conn: natstest.Connect(t, ns, reconnecting()...),
		Consumers: []coreconsumer.Config{{Stream: stream, Name: consumer, AckWait: 5 * time.Second, MaxAckPending: 1024,
			DeadLetter: &coreconsumer.DeadLetter{Subject: "dlq.billing"}}},
		Keys: token.RandomKeyring(), RequestTimeout: time.Second, Logger: testLogger(t),
	})
	d := driver(g)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	n, poison := scale(600, 5000), scale(60, 500)
	forged := []string{"$JS.API.STREAM.PURGE.ORDERS", "$JS.API.STREAM.DELETE.OTHER", "other.x", "orders.*", "_INBOX.x", "dlq.billing"}
	redrive := func(ctx context.Context) {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		resp, err := g.Consumers.Redrive(rctx, &jetgatev1.RedriveRequest{Stream: stream, Consumer: consumer})
		if err == nil && resp.GetRedriven() != 0 {
			t.Errorf("a forged dead letter was redriven: %v", resp)
		}
	}
	r := run(t, d, n, 4, 3*time.Minute, func(ctx context.Context) {
		// Counted as published from the start, so that the driver keeps
		// consuming until the last one is acked.
		id := func(i int) string { return t.Name() + "-poison-" + strconv.Itoa(i) }
		for i := range poison {
			d.Checker.Attempt(id(i))
			d.Checker.Published(id(i), time.Now())
		}
		for i := 0; i < poison && ctx.Err() == nil; i++ {
			waitPublished(ctx, d.Checker, poison+i*n/(2*poison))
			m := &nats.Msg{Subject: "orders.\xff" + strconv.Itoa(i), Data: []byte(id(i)), Header: nats.Header{"X-Bad": {"\xfe\xff"}}}
			if _, err := js.PublishMsg(ctx, m); err != nil {
				t.Errorf("publish poison: %v", err)
				return
			}
			h := nats.Header{deadletter.HeaderStream: {stream}, deadletter.HeaderConsumer: {consumer},
				deadletter.HeaderSubject: {forged[i%len(forged)]}}
			if err := nc.PublishMsg(&nats.Msg{Subject: "dlq.billing", Data: []byte("forged"), Header: h}); err != nil {
				t.Errorf("forge: %v", err)
				return
			}
			redrive(ctx)
		}
		for ctx.Err() == nil && d.Checker.Report().Published < n+poison {
			redrive(ctx)
			backoff(ctx, 50*time.Millisecond)
		}
	})
	assertDrained(t, nc, r)
	if info, err := other.Info(context.Background()); err != nil || info.State.Msgs != 0 {
		t.Fatalf("stream OTHER: %+v %v; want nothing stored", info, err)
	}
	for {
		m, err := api.NextMsg(0)
		if err != nil {
			break
		}
		if s := m.Subject; strings.HasPrefix(s, "$JS.API.STREAM.PURGE.") || strings.HasPrefix(s, "$JS.API.STREAM.DELETE.") {
			t.Fatalf("a redrive called the stream API: %s", s)
		}
	}
}
