package replica_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// A jetgate on the hub itself, configured with the hub's domain
// (jetstream_domain: hub, as its peers on the leaf nodes are), sees the
// resets of its consumers pass, as one configured with no domain does: it
// watched $JS.hub.API.CONSUMER.RESET.>, which the hub maps to $JS.API
// before delivering, so a reset through the domain (a leaf's jetgate's
// Seek, `nats --js-domain hub consumer ...`) left its leases live, and an
// Ack of a lease from before the reset was sent.
func TestAJetgateOnTheHubWithTheHubsDomainSeesResets(t *testing.T) { resetThroughTheHub(t, "hub") }
func TestAJetgateOnTheHubWithNoDomainSeesResets(t *testing.T)      { resetThroughTheHub(t, "") }

// resetThroughTheHub resets, from the leaf through the hub's domain, the
// hub's consumer that a jetgate on the hub configured with domain serves,
// and checks that a lease from before the reset settles nothing.
func resetThroughTheHub(t *testing.T, domain string) {
	hub, leaf := natstest.StartHubAndLeaf(t, "hub", "leaf")
	hc := natstest.Connect(t, hub)
	natstest.Stream(t, hc, "ORDERS", "orders.>")
	r := replicaOf(t, hub, token.RandomKeyring(), replica.Options{
		Domain:    domain,
		Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing", AckWait: time.Minute}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hjs, err := jetstream.New(hc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hjs.Publish(ctx, "orders.1", []byte("m")); err != nil {
		t.Fatal(err)
	}
	held, err := r.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second})
	if err != nil || len(held.Messages) != 1 {
		t.Fatalf("fetch: %+v %v", held, err)
	}
	lc := natstest.Connect(t, leaf)
	if _, err := lc.Request("$JS.hub.API.CONSUMER.RESET.ORDERS.billing", nil, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	out, err := r.Settle(ctx, settle.Request{Op: lease.OpAck, Stream: "ORDERS", Consumer: "billing", Tokens: []string{held.Messages[0].Token}})
	if err != nil || !errors.Is(out[0].Err, errs.ErrLeaseExpired) {
		t.Fatalf("ack of a lease from before the reset: %+v %v; want LEASE_EXPIRED", out, err)
	}
}
