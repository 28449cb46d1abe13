package replica_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
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

// An operator cuts an on-demand consumer's ack_wait from 60s to 2s with
// another tool while jetgate holds a lease of it (DESIGN section 17). The
// update request passes a subject every replica sees: the replica asks a few
// infos (no periodic one: nothing of it is open), counts the change, and
// re-dates the lease it holds. The server redelivers to a nats.go client;
// a Term of jetgate's first token is then LEASE_EXPIRED and the other
// holder's delivery stays pending. A new lease carries the server's 2s.
func TestAnOperatorsAckWaitCutIsFollowedWithoutPolling(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	plain, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{
		Durable: "team-a", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	keys := token.RandomKeyring()
	r := replicaOf(t, ns, keys, replica.Options{Metrics: reg, OnDemand: consumer.OnDemand{Match: []consumer.Match{{Stream: "ORDERS", Consumer: "team-*"}}}})
	if _, err := js.Publish(ctx, "orders.1", []byte("m")); err != nil {
		t.Fatal(err)
	}
	first, err := r.Fetch(ctx, "ORDERS", "team-a", consumer.FetchRequest{Batch: 1, Expires: time.Second})
	if err != nil || len(first.Messages) != 1 || time.Until(first.Messages[0].Deadline) < 50*time.Second {
		t.Fatalf("first fetch: %+v %v; want a lease of about 58s", first, err)
	}

	var infos atomic.Int64
	tap, err := nc.Subscribe("$JS.API.CONSUMER.INFO.ORDERS.team-a", func(*nats.Msg) { infos.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tap.Unsubscribe() }()
	cfg := plain.CachedInfo().Config
	cfg.AckWait = 2 * time.Second
	if _, err := js.UpdateConsumer(ctx, "ORDERS", cfg); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 10*time.Second, "the edit counted", func() bool {
		m := seriesOf(t, reg, "jetgate_consumer_policy_changes_total", "team-a")
		return m != nil && m.GetCounter().GetValue() == 1
	})
	if n := infos.Load(); n > 6 {
		t.Fatalf("%d infos asked to follow one edit; want a few", n)
	}
	// Beside it, from the start at zero: the resets' drains given up.
	if m := seriesOf(t, reg, "jetgate_consumer_reset_drains_given_up_total", "team-a"); m == nil || m.GetCounter().GetValue() != 0 {
		t.Fatalf("jetgate_consumer_reset_drains_given_up_total of team-a: %v; want 0", m)
	}

	b, err := plain.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var other jetstream.Msg
	for m := range b.Messages() {
		other = m
	}
	if other == nil {
		t.Fatal("the nats.go client got nothing in 10s")
	}
	if md, _ := other.Metadata(); md.NumDelivered != 2 || md.Sequence.Stream != first.Messages[0].Meta.StreamSeq {
		t.Fatalf("the nats.go client got %+v; want the redelivery of jetgate's lease", md)
	}
	out, err := r.Settle(ctx, settle.Request{Op: lease.OpTerm, Stream: "ORDERS", Consumer: "team-a", Tokens: []string{first.Messages[0].Token}})
	if err != nil || !errors.Is(out[0].Err, errs.ErrLeaseExpired) {
		t.Fatalf("Term of jetgate's stale token: %v %v; want LEASE_EXPIRED", out, err)
	}
	if ci, err := plain.Info(ctx); err != nil || ci.NumAckPending != 1 {
		t.Fatalf("ack pending after the stale Term: %v %v; want the other holder's delivery still pending", ci, err)
	}

	if _, err := js.Publish(ctx, "orders.2", []byte("m")); err != nil {
		t.Fatal(err)
	}
	fresh, err := r.Fetch(ctx, "ORDERS", "team-a", consumer.FetchRequest{Batch: 1, Expires: time.Second})
	if err != nil || len(fresh.Messages) != 1 || time.Until(fresh.Messages[0].Deadline) > 2*time.Second {
		t.Fatalf("a lease after the edit: %+v %v; want one of at most the server's 2s", fresh, err)
	}
}

// jetgate restarts with another ack_wait on the same NATS store, the server
// restarted too (DESIGN section 17): the first update after the server
// recovered the consumer answers with the consumer as recovered, and the
// leases must carry the new ack_wait all the same.
func TestARestartWithAnotherAckWaitDatesLeasesByIt(t *testing.T) {
	dir := t.TempDir()
	before := natstest.StartIn(t, dir, -1)
	natstest.Stream(t, natstest.Connect(t, before), "ORDERS", "orders.>")
	keys := token.RandomKeyring()
	a := replicaOf(t, before, keys, replica.Options{Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing", AckWait: 30 * time.Second}}})
	a.Close()
	before.Shutdown()
	before.WaitForShutdown()

	after := natstest.StartIn(t, dir, -1)
	nc := natstest.Connect(t, after)
	b := replicaOf(t, after, keys, replica.Options{Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing", AckWait: 3 * time.Second}}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "orders.1", []byte("m")); err != nil {
		t.Fatal(err)
	}
	res, err := b.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: time.Second})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("fetch: %+v %v", res, err)
	}
	if left := time.Until(res.Messages[0].Deadline); left > 3*time.Second {
		t.Fatalf("a lease after the restart with ack_wait 3s says %v; want at most 3s", left)
	}
}

// A lease kept alive by its issuer (Extend with a duration) outlives the
// issuer only until the server's redelivery as of the Extend: a replica
// acting on the new token alone after that refuses it, though the token
// says the lease lasts 10s.
func TestAKeptLeaseOfAGoneIssuerEndsAtTheServersDeadline(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	keys := token.RandomKeyring()
	cs := []consumer.Config{{Stream: "ORDERS", Name: "billing", AckWait: time.Second}}
	issuer := replicaOf(t, ns, keys, replica.Options{Consumers: cs})
	other := replicaOf(t, ns, keys, replica.Options{Consumers: cs})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := nc.Publish("orders.1", []byte("m")); err != nil {
		t.Fatal(err)
	}
	res, err := issuer.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("fetch: %+v %v", res, err)
	}
	ten := 10 * time.Second
	asked := time.Now()
	out, err := issuer.Settle(ctx, settle.Request{Op: lease.OpExtend, Stream: "ORDERS", Consumer: "billing", Tokens: []string{res.Messages[0].Token}, Duration: &ten})
	if err != nil || out[0].Err != nil || out[0].Deadline.Before(asked.Add(9*time.Second)) {
		t.Fatalf("extend by 10s: %+v %v", out, err)
	}
	issuer.Close()
	<-time.After(time.Until(asked.Add(time.Second))) // the server's deadline without the keep-alive
	out, err = other.Settle(ctx, settle.Request{Op: lease.OpAck, Stream: "ORDERS", Consumer: "billing", Tokens: []string{out[0].NewToken}})
	if err != nil || !errors.Is(out[0].Err, errs.ErrLeaseExpired) {
		t.Fatalf("ack of a kept lease whose issuer is gone, past the server's deadline: %+v %v; want LEASE_EXPIRED", out, err)
	}
}
