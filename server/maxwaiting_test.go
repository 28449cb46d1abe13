package server

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetgate/jetgate/internal/natstest"
)

// Past max_waiting the server drops a pull with heartbeats silently; the
// Fetch must say MAX_WAITING rather than call NATS unavailable.
func TestFetchPastMaxWaitingIsEmptyWithAReason(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cons, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "busy", AckPolicy: jetstream.AckExplicitPolicy, MaxWaiting: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Another client holds both places.
	other := natstest.Connect(t, ns)
	inbox := other.NewRespInbox()
	sub, err := other.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	for i := 0; i < 2; i++ {
		if err := other.PublishRequest("$JS.API.CONSUMER.MSG.NEXT.ORDERS.busy", inbox, []byte(`{"batch":1,"expires":20000000000}`)); err != nil {
			t.Fatal(err)
		}
	}
	natstest.Eventually(t, 5*time.Second, "both places taken", func() bool {
		ci, err := cons.Info(ctx)
		return err == nil && ci.NumWaiting == 2
	})

	in, err := newInbox(nc)
	if err != nil {
		t.Fatal(err)
	}
	defer in.stop()
	b := newBinding(cons, nc, in, RandomKeyring(), NewGatewayID(), 2*time.Second,
		slog.New(slog.NewTextHandler(io.Discard, nil)), newMetrics(prometheus.NewRegistry()))
	res, err := b.fetch(ctx, FetchRequest{Batch: 1, Expires: 10 * time.Second})
	if err != nil || res.Empty != EmptyMaxWaiting {
		t.Fatalf("fetch past max_waiting: %v, empty reason %v", err, res.Empty)
	}
}
