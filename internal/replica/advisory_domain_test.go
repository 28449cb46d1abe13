package replica

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
)

// The server's advisories cross a leaf node both ways, and a hub's consumer
// and a leaf's may share their names: a replica takes only the advisories
// of the JetStream domain it serves. A new leader's advisory for
// ORDERS/billing from another domain cuts nothing; one of its own does.
func TestAdvisoriesOfAnotherDomainAreIgnored(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, c, _ := leaseOne(t, ctx, natstest.Connect(t, ns), nc)
	before := c.Holders()[0].Latest
	advise := func(body string) {
		t.Helper()
		if err := nc.Publish(leaderAdvisories+"ORDERS.billing", []byte(body)); err != nil {
			t.Fatal(err)
		}
		// Through the server, then on the replica's own connection: the
		// advisory is in its subscription; catchUp waits until handled.
		for _, conn := range []interface{ Flush() error }{nc, r.nc} {
			if err := conn.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.relay.catchUp(ctx); err != nil {
			t.Fatal(err)
		}
	}
	advise(`{"type":"io.nats.jetstream.advisory.v1.consumer_leader_elected","stream":"ORDERS","consumer":"billing","domain":"elsewhere"}`)
	if got := c.Holders()[0].Latest; !got.Equal(before) {
		t.Fatalf("another domain's new leader moved the lease to %v; want it left at %v", got, before)
	}
	advise(`{"type":"io.nats.jetstream.advisory.v1.consumer_leader_elected","stream":"ORDERS","consumer":"billing"}`)
	if got, want := c.Holders()[0].Latest, before.Add(-lease.RestorePrecision); !got.Equal(want) {
		t.Fatalf("its own domain's new leader left the lease at %v; want %v", got, want)
	}
}

// The domain a replica serves is the configured one, else its connection's
// own JetStream's: a leaf node's, though the leaf hears the hub's
// advisories too.
func TestTheDomainServedIsTheConnections(t *testing.T) {
	_, leaf := natstest.StartHubAndLeaf(t, "hub", "leaf")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, err := jetstream.New(natstest.Connect(t, leaf))
	if err != nil {
		t.Fatal(err)
	}
	for configured, want := range map[string]string{"": "leaf", "hub": "hub"} {
		if got, err := servedDomain(ctx, js, configured); err != nil || got != want {
			t.Errorf("configured %q: served %q (%v); want %q", configured, got, err, want)
		}
	}
}
