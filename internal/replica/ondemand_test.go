package replica_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// A consumer an operator creates after jetgate started is served on its
// first call through either replica and settled through the other; jetgate
// changes nothing of it. One that matches no pattern, or does not exist, is
// CONSUMER_NOT_FOUND; one deleted on the server is unbound; one nobody
// calls is unbound after idle_unbind, once the settled leases its issuer
// keeps for retries are dropped (one ack_wait after the settle).
func TestConsumersOnDemand(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	s := natstest.Stream(t, nc, "ORDERS", "orders.>")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	od := consumer.OnDemand{Match: []consumer.Match{{Stream: "ORDERS", Consumer: "team-*"}}, IdleUnbind: time.Second}
	keys, regA := token.RandomKeyring(), prometheus.NewRegistry()
	a := replicaOf(t, ns, keys, replica.Options{OnDemand: od, Metrics: regA})
	b := replicaOf(t, ns, keys, replica.Options{OnDemand: od})

	if _, err := a.Fetch(ctx, "ORDERS", "team-a", consumer.FetchRequest{Batch: 1}); !errors.Is(err, errs.ErrConsumerNotFound) {
		t.Fatalf("a matching name that does not exist: %v, want CONSUMER_NOT_FOUND", err)
	}
	if _, err := a.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1}); !errors.Is(err, errs.ErrConsumerNotFound) {
		t.Fatalf("a name that matches nothing: %v, want CONSUMER_NOT_FOUND", err)
	}
	cfg := jetstream.ConsumerConfig{Durable: "team-a", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 8 * time.Second, Description: "the operator's"}
	if _, err := s.CreateConsumer(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "orders.1", []byte("on demand")); err != nil {
		t.Fatal(err)
	}
	res, err := a.Fetch(ctx, "ORDERS", "team-a", consumer.FetchRequest{Batch: 1, Expires: 2 * time.Second})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("first call through a: %v %v", res, err)
	}
	out, err := b.Settle(ctx, settle.Request{Op: lease.OpAck, Stream: "ORDERS", Consumer: "team-a", Tokens: []string{res.Messages[0].Token}})
	if err != nil || out[0].Err != nil {
		t.Fatalf("ack through b: %v %v", out, err)
	}
	ci, err := js.Consumer(ctx, "ORDERS", "team-a")
	if err != nil {
		t.Fatal(err)
	}
	info := ci.CachedInfo()
	if info.NumAckPending != 0 || info.AckFloor.Stream != 1 {
		t.Fatalf("after the ack: ack pending %d, floor %d", info.NumAckPending, info.AckFloor.Stream)
	}
	if info.Config.AckWait != cfg.AckWait || info.Config.Description != cfg.Description {
		t.Fatalf("jetgate changed the operator's consumer: %+v", info.Config)
	}
	bound := func() float64 { return onDemand(t, regA) }
	if n := bound(); n != 1 {
		t.Fatalf("jetgate_consumers_bound{on_demand} = %v, want 1", n)
	}
	if !hasSeries(t, regA, "jetgate_fetched_messages_total", "team-a") {
		t.Fatal("a bound team-a has no jetgate_fetched_messages_total")
	}
	// Idle past idle_unbind, holding nothing (the Ack kept for retries for
	// ack_wait, 8s): unbound.
	natstest.Eventually(t, 30*time.Second, "a unbinds team-a once idle", func() bool { return bound() == 0 })
	if _, err := a.Pulls("ORDERS", "team-a"); !errors.Is(err, errs.ErrConsumerNotFound) {
		t.Fatalf("after unbinding, a still serves team-a: %v", err)
	}
	if hasSeries(t, regA, "jetgate_fetched_messages_total", "team-a") {
		t.Fatal("an unbound team-a keeps its jetgate_fetched_messages_total")
	}
	deletedIsUnbound(t, ctx, s, b)
}

// deletedIsUnbound creates team-b, has replica b bind it, and deletes it
// on the server: b unbinds it at once, and it is NOT_FOUND after.
func deletedIsUnbound(t *testing.T, ctx context.Context, s jetstream.Stream, b *replica.Replica) {
	t.Helper()
	if _, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "team-b", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Consumer(ctx, "ORDERS", "team-b"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteConsumer(ctx, "team-b"); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 5*time.Second, "b unbinds the deleted team-b", func() bool {
		_, err := b.Pulls("ORDERS", "team-b")
		return errors.Is(err, errs.ErrConsumerNotFound)
	})
	if _, err := b.Fetch(ctx, "ORDERS", "team-b", consumer.FetchRequest{Batch: 1}); !errors.Is(err, errs.ErrConsumerNotFound) {
		t.Fatalf("a deleted consumer: %v, want CONSUMER_NOT_FOUND", err)
	}
}

// Concurrent first calls of an on-demand consumer share one bind.
func TestConcurrentFirstCallsShareOneBind(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	s := natstest.Stream(t, nc, "ORDERS", "orders.>")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "team-c", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	a := replicaOf(t, ns, token.RandomKeyring(), replica.Options{OnDemand: consumer.OnDemand{Match: []consumer.Match{{Stream: "*", Consumer: "*"}}}})
	rq := countRequests(t, ns)
	errc := make(chan error, 20)
	for range 20 {
		go func() {
			_, err := a.Consumer(ctx, "ORDERS", "team-c")
			errc <- err
		}()
	}
	for range 20 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	rq.mu.Lock()
	defer rq.mu.Unlock()
	// One info binds; each GetConsumer asks its own.
	if n := rq.kinds["$JS.API.CONSUMER.INFO"]; n > 21 {
		t.Fatalf("%d consumer infos for 20 concurrent first calls; want one bind and one per call", n)
	}
}

// onDemand is jetgate_consumers_bound{source="on_demand"} in reg.
func onDemand(t *testing.T, reg *prometheus.Registry) float64 {
	return testutil.ToFloat64(gaugeOf(t, reg, "jetgate_consumers_bound", "on_demand"))
}

// An application's own ephemeral consumer whose name matches a pattern is
// not served (a reviewer's finding: a caller who knew its name took its
// messages, and jetgate's pulls kept it alive past its inactive_threshold).
func TestAnEphemeralConsumerIsNotBoundOnDemand(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	s := natstest.Stream(t, nc, "ORDERS", "orders.>")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	od := consumer.OnDemand{Match: []consumer.Match{{Stream: "ORDERS", Consumer: "*"}}}
	a := replicaOf(t, ns, token.RandomKeyring(), replica.Options{OnDemand: od})
	if _, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Name: "app-worker-1", AckPolicy: jetstream.AckExplicitPolicy, InactiveThreshold: time.Minute}); err != nil {
		t.Fatal(err)
	}
	_, err := a.Fetch(ctx, "ORDERS", "app-worker-1", consumer.FetchRequest{Batch: 1})
	if !errors.Is(err, errs.ErrConsumerNotFound) || !strings.Contains(err.Error(), "ephemeral") {
		t.Fatalf("a Fetch of an application's ephemeral consumer: %v; want CONSUMER_NOT_FOUND naming it ephemeral", err)
	}
}
