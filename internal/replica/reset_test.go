package replica_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

// Another replica's word that a consumer was reset voids the leases this
// replica holds on that consumer, and only on it, and is answered once they
// are void; its own word is ignored, unanswered.
func TestAResetToldByAnotherReplicaVoidsTheLeasesHere(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	reg := prometheus.NewRegistry()
	r, err := replica.New(context.Background(), replica.Options{
		Conn: natstest.Connect(t, ns),
		Consumers: []consumer.Config{
			{Stream: "ORDERS", Name: "billing", AckWait: time.Minute},
			{Stream: "ORDERS", Name: "audit", AckWait: time.Minute},
		},
		Keys: token.RandomKeyring(), Metrics: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	js, _ := jetstream.New(nc)
	for range 2 {
		if _, err := js.Publish(context.Background(), "orders.a", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	// The lease gauge reads the table; the resets counter, the watch.
	leases := func(name string) float64 {
		return testutil.ToFloat64(gaugeOf(t, reg, "jetgate_leases_live", name))
	}
	resets := func(name string) float64 {
		return seriesOf(t, reg, "jetgate_consumer_resets_total", name).GetCounter().GetValue()
	}
	for _, name := range []string{"billing", "audit"} {
		res, err := r.Fetch(context.Background(), "ORDERS", name, consumer.FetchRequest{Batch: 2, Expires: time.Second})
		if err != nil || len(res.Messages) != 2 {
			t.Fatalf("fetch %s: %v %v", name, res, err)
		}
	}
	tell := func(name, from string) error {
		_, err := nc.Request("_JETGATE.RESET.ORDERS."+name, []byte(from), 500*time.Millisecond)
		return err
	}
	other := token.NewIssuerID().String()
	if err := tell("billing", r.ID().String()); !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("the replica's own word: %v, want no answer", err)
	}
	if err := tell("audit", other); err != nil {
		t.Fatalf("another's word: %v, want an answer", err)
	}
	if n := leases("audit"); n != 0 {
		t.Fatalf("audit holds %v leases once the word is answered; want none", n)
	}
	if n := leases("billing"); n != 2 {
		t.Fatalf("billing holds %v leases after the replica's own word; want its 2", n)
	}
	if a, b := resets("audit"), resets("billing"); a != 1 || b != 0 {
		t.Fatalf("resets counted: audit %v, billing %v; want 1 and 0", a, b)
	}
	if err := tell("billing", other); err != nil {
		t.Fatalf("another's word: %v, want an answer", err)
	}
	if n := leases("billing"); n != 0 {
		t.Fatalf("billing holds %v leases once the word is answered; want none", n)
	}
	if n := resets("billing"); n != 1 {
		t.Fatalf("billing's resets counted: %v, want 1", n)
	}
}
