package core_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/core"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/token"
)

// Another replica's word that a consumer was reset voids the leases this
// replica holds on that consumer, and only on it; its own word is ignored.
func TestAResetToldByAnotherReplicaVoidsTheLeasesHere(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	reg := prometheus.NewRegistry()
	r, err := core.New(context.Background(), core.Options{
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
	// The lease gauge reads the table.
	leases := func(name string) float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if mf.GetName() == "jetgate_leases_live" && l.GetName() == "consumer" && l.GetValue() == name {
						return m.GetGauge().GetValue()
					}
				}
			}
		}
		t.Fatalf("no jetgate_leases_live of %s", name)
		return 0
	}
	for _, name := range []string{"billing", "audit"} {
		res, err := r.Fetch(context.Background(), "ORDERS", name, consumer.FetchRequest{Batch: 2, Expires: time.Second})
		if err != nil || len(res.Messages) != 2 {
			t.Fatalf("fetch %s: %v %v", name, res, err)
		}
	}
	tell := func(name, from string) {
		if err := nc.Publish("_JETGATE.RESET.ORDERS."+name, []byte(from)); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	other := token.NewIssuerID().String()
	// One subscription per consumer takes the words in order.
	tell("billing", r.ID().String())
	tell("audit", other)
	natstest.Eventually(t, 5*time.Second, "audit's leases void", func() bool { return leases("audit") == 0 })
	if n := leases("billing"); n != 2 {
		t.Fatalf("billing holds %v leases after the replica's own word; want its 2", n)
	}
	tell("billing", other)
	natstest.Eventually(t, 5*time.Second, "billing's leases void", func() bool { return leases("billing") == 0 })
}
