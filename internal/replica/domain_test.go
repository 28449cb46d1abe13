package replica_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// A jetgate connected to a leaf node serves a consumer of the hub's
// JetStream through the hub's domain: it binds it, fetches and acks, and
// sees a reset of it pass (the reset request goes through the domain's API
// prefix too) — while the leaf has a JetStream of its own.
func TestALeafNodesJetgateServesTheHubsConsumer(t *testing.T) {
	hub, leaf := natstest.StartHubAndLeaf(t, "hub", "leaf")
	hc := natstest.Connect(t, hub)
	natstest.Stream(t, hc, "ORDERS", "orders.>")
	reg := prometheus.NewRegistry()
	r := replicaOf(t, leaf, token.RandomKeyring(), replica.Options{
		Domain: "hub", Metrics: reg,
		Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing", AckWait: time.Minute}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hjs, err := jetstream.New(hc)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := hjs.Publish(ctx, "orders.1", []byte("from the hub")); err != nil {
			t.Fatal(err)
		}
	}
	res, err := r.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("fetch through the leaf: %+v %v", res, err)
	}
	out, err := r.Settle(ctx, settle.Request{Op: lease.OpAck, Stream: "ORDERS", Consumer: "billing", Tokens: []string{res.Messages[0].Token}})
	if err != nil || out[0].Err != nil {
		t.Fatalf("ack through the leaf: %+v %v", out, err)
	}
	c, err := hjs.Consumer(ctx, "ORDERS", "billing")
	if err != nil {
		t.Fatal(err)
	}
	if ci, err := c.Info(ctx); err != nil || ci.AckFloor.Stream != 1 || ci.Config.AckWait != time.Minute {
		t.Fatalf("the hub's consumer: %+v %v; want it made with ack_wait 1m, its ack floor at 1", ci, err)
	}

	// A client of the leaf resets the hub's consumer through the domain:
	// the replica sees the request pass and voids its lease.
	held, err := r.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second})
	if err != nil || len(held.Messages) != 1 {
		t.Fatalf("second fetch: %+v %v", held, err)
	}
	lc := natstest.Connect(t, leaf)
	if _, err := lc.Request("$JS.hub.API.CONSUMER.RESET.ORDERS.billing", nil, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 10*time.Second, "the reset seen through the domain", func() bool {
		m := seriesOf(t, reg, "jetgate_consumer_resets_total", "billing")
		return m != nil && m.GetCounter().GetValue() == 1
	})
	out, err = r.Settle(ctx, settle.Request{Op: lease.OpAck, Stream: "ORDERS", Consumer: "billing", Tokens: []string{held.Messages[0].Token}})
	if err != nil || !errors.Is(out[0].Err, errs.ErrLeaseExpired) {
		t.Fatalf("ack of a lease from before the reset: %+v %v; want LEASE_EXPIRED", out, err)
	}
}
