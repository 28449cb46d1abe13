package replica

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/token"
)

// A consumer of a standalone server (JetStream not clustered) has no
// leader named in its info. A replica connected to that server hears its
// restart as a reconnect; one that reaches it through a leaf node hears
// nothing, and the restarted server redelivers by times it kept to the
// second: that replica's leases end a second sooner from the start.
func TestALeaseOfAStandaloneHubsConsumerThroughALeafEndsASecondSooner(t *testing.T) {
	hub, leaf := natstest.StartHubAndLeaf(t, "hub", "leaf")
	hc := natstest.Connect(t, hub)
	natstest.Stream(t, hc, "ORDERS", "orders.>")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, _ := jetstream.New(hc)
	wait := time.Minute - lease.Margin(time.Minute)
	given := func(r *Replica) time.Duration {
		if _, err := js.Publish(ctx, "orders.1", []byte("m")); err != nil {
			t.Fatal(err)
		}
		fetchN(t, ctx, r, 1)
		h := r.bound("ORDERS", "billing").Holders()[0]
		return h.Latest.Sub(h.Oldest)
	}
	keys := token.RandomKeyring()
	if got := given(billingOn(t, natstest.Connect(t, hub), keys, "hub")); got <= wait-lease.RestorePrecision/2 || got > wait {
		t.Fatalf("connected to the hub: a lease of %v; want %v less the moment between receipt and handing out", got, wait)
	}
	if got := given(billingOn(t, natstest.Connect(t, leaf), keys, "hub")); got > wait-lease.RestorePrecision {
		t.Fatalf("through the leaf: a lease of %v; want at most %v, a second less", got, wait-lease.RestorePrecision)
	}
}
