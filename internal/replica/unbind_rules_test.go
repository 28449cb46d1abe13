package replica

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// A consumer is served on demand when both its stream and its name match
// one pattern pair.
func TestOnDemandMatchesBothPatternsOfOnePair(t *testing.T) {
	o := consumer.OnDemand{Match: []consumer.Match{{Stream: "ORDERS", Consumer: "team-*"}, {Stream: "AUDIT-*", Consumer: "audit"}}}
	for _, tc := range []struct {
		stream, name string
		want         bool
	}{
		{"ORDERS", "team-a", true},
		{"AUDIT-1", "audit", true},
		{"ORDERS", "billing", false}, // the stream of the first pair only
		{"AUDIT", "team-a", false},   // the name of the first pair only
		{"AUDIT-1", "team-a", false}, // the stream of one pair, the name of the other
		{"ORDERS", "audit", false},
	} {
		if got := o.Matches(tc.stream, tc.name); got != tc.want {
			t.Errorf("matches(%q, %q) = %v, want %v", tc.stream, tc.name, got, tc.want)
		}
	}
}

// onDemandEnv is a replica serving ORDERS' consumers named team-* on
// demand, unbound after idle, and the stream, on a server of its own.
func onDemandEnv(t *testing.T, idle time.Duration) (*Replica, jetstream.Stream, jetstream.JetStream) {
	t.Helper()
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	s := natstest.Stream(t, nc, "ORDERS", "orders.>")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := New(ctx, Options{Conn: natstest.Connect(t, ns), Keys: token.RandomKeyring(), RequestTimeout: 5 * time.Second,
		OnDemand: consumer.OnDemand{Match: []consumer.Match{{Stream: "ORDERS", Consumer: "team-*"}}, IdleUnbind: idle},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r, s, js
}

func createConsumers(t *testing.T, s jetstream.Stream, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := s.CreateConsumer(context.Background(), jetstream.ConsumerConfig{Durable: n, AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
}

// call makes one call of consumer name on r that ends at once.
func call(t *testing.T, r *Replica, name string) {
	t.Helper()
	_, done, err := r.consumer(context.Background(), "ORDERS", name)
	if err != nil {
		t.Fatal(err)
	}
	done()
}

func waitUnbound(t *testing.T, r *Replica, name string) {
	t.Helper()
	natstest.Eventually(t, 10*time.Second, name+" unbound", func() bool { return r.bound("ORDERS", name) == nil })
}

// pastIdle returns once the unbinder has passed over every binding at a
// time when whatever was last called before pastIdle was called had been
// idle for idle_unbind: a marker called after it is unbound (a pass over
// every binding decides it), and then a second marker, whose pass starts
// only after the first one's ended.
func pastIdle(t *testing.T, r *Replica, s jetstream.Stream) {
	t.Helper()
	createConsumers(t, s, "team-marker-1", "team-marker-2")
	for _, m := range []string{"team-marker-1", "team-marker-2"} {
		call(t, r, m)
		waitUnbound(t, r, m)
	}
}

// An on-demand consumer is not unbound while a call of it runs, however
// long it runs; once the call ends and idle_unbind passes, it is.
func TestAnOnDemandConsumerIsNotUnboundDuringACall(t *testing.T) {
	r, s, _ := onDemandEnv(t, 100*time.Millisecond)
	createConsumers(t, s, "team-a")
	_, done, err := r.consumer(context.Background(), "ORDERS", "team-a")
	if err != nil {
		t.Fatal(err)
	}
	pastIdle(t, r, s)
	if r.bound("ORDERS", "team-a") == nil {
		done()
		t.Fatal("team-a was unbound while a call of it ran")
	}
	done()
	waitUnbound(t, r, "team-a")
}

// An on-demand consumer is not unbound while this replica holds a lease of
// it, whoever calls; once the lease is settled, and idle_unbind and the
// settled lease's retention (ack_wait, kept for retries) pass, it is.
func TestAnOnDemandConsumerHoldingALeaseIsNotUnbound(t *testing.T) {
	r, s, js := onDemandEnv(t, 100*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "team-a", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "orders.1", []byte("held")); err != nil {
		t.Fatal(err)
	}
	res, err := r.Fetch(ctx, "ORDERS", "team-a", consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("fetch: %v %v", res, err)
	}
	pastIdle(t, r, s)
	if r.bound("ORDERS", "team-a") == nil {
		t.Fatal("team-a was unbound while this replica held a lease of it")
	}
	out, err := r.Settle(ctx, settle.Request{Op: lease.OpAck, Stream: "ORDERS", Consumer: "team-a", Tokens: []string{res.Messages[0].Token}})
	if err != nil || out[0].Err != nil {
		t.Fatalf("ack: %v %v", out, err)
	}
	natstest.Eventually(t, 30*time.Second, "team-a unbound", func() bool { return r.bound("ORDERS", "team-a") == nil })
}

// An on-demand consumer stays bound for idle_unbind after its last call.
func TestAnOnDemandConsumerStaysBoundForIdleUnbind(t *testing.T) {
	const idle = time.Second
	r, s, _ := onDemandEnv(t, idle)
	createConsumers(t, s, "team-a")
	_, done, err := r.consumer(context.Background(), "ORDERS", "team-a")
	if err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	done()
	waitUnbound(t, r, "team-a")
	if d := time.Since(ended); d < idle {
		t.Fatalf("team-a unbound %v after its last call; idle_unbind is %v", d, idle)
	}
}
