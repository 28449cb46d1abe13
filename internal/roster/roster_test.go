package roster_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/roster"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// count is what a replica was last told of a consumer's roster.
type count struct {
	mu sync.Mutex
	n  int
}

func (c *count) set(n int) { c.mu.Lock(); c.n = n; c.mu.Unlock() }
func (c *count) get() int  { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

func open(t *testing.T, nc *nats.Conn, self string) *roster.Roster {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	r, err := roster.Open(context.Background(), js, "", 1, self, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func join(t *testing.T, r *roster.Roster, stream, consumer string) *count {
	t.Helper()
	c := &count{}
	r.Join(stream, consumer, c.set, func() {})
	return c
}

// Replicas joining one consumer see each other at once; those of another
// consumer do not count; one that leaves is gone from the others' count at
// once, and one that stops without a word once its key ages out.
func TestRosterCountsTheReplicasOfEachConsumer(t *testing.T) {
	ns := natstest.Start(t)
	ctx := context.Background()

	a := open(t, natstest.Connect(t, ns), "a")
	defer a.Close(ctx)
	aBilling := join(t, a, "ORDERS", "billing")
	if n := aBilling.get(); n != 1 {
		t.Fatalf("alone: told %d, want 1", n)
	}

	b := open(t, natstest.Connect(t, ns), "b")
	bBilling := join(t, b, "ORDERS", "billing")
	natstest.Eventually(t, 5*time.Second, "b sees a", func() bool { return bBilling.get() == 2 })
	natstest.Eventually(t, 5*time.Second, "a sees b", func() bool { return aBilling.get() == 2 })

	// Another consumer of the same stream has a roster of its own.
	bShipping := join(t, b, "ORDERS", "shipping")
	if n := bShipping.get(); n != 1 {
		t.Fatalf("shipping: told %d, want 1", n)
	}

	b.Leave("ORDERS", "billing")
	natstest.Eventually(t, 5*time.Second, "a sees b leave billing", func() bool { return aBilling.get() == 1 })
	b.Join("ORDERS", "billing", bBilling.set, func() {})
	natstest.Eventually(t, 5*time.Second, "a sees b back", func() bool { return aBilling.get() == 2 })
	b.Close(ctx)
	natstest.Eventually(t, 5*time.Second, "a sees b leave", func() bool { return aBilling.get() == 1 })

	// A replica whose connection dies leaves by its key aging out.
	cconn := natstest.Connect(t, ns)
	c := open(t, cconn, "c")
	join(t, c, "ORDERS", "billing")
	natstest.Eventually(t, 5*time.Second, "a sees c", func() bool { return aBilling.get() == 2 })
	cconn.Close()
	stopped := time.Now()
	natstest.Eventually(t, roster.TTL+3*roster.RenewEvery, "a sees c age out", func() bool { return aBilling.get() == 1 })
	t.Logf("a replica that stopped without a word left the count after %v (key TTL %v)", time.Since(stopped).Round(time.Millisecond), roster.TTL)
	c.Close(ctx)
}

// Join says when the bucket holds the replica as serving the consumer; a
// peer that catches up then counts it, whatever its watch has shown yet:
// the order a reset's word relies on (consumer.HoldUntilCounted).
func TestAPeerThatCatchesUpCountsAReplicaOnceItIsStored(t *testing.T) {
	ns := natstest.Start(t)
	ctx := context.Background()
	b := open(t, natstest.Connect(t, ns), "b")
	defer b.Close(ctx)
	bBilling := join(t, b, "ORDERS", "billing")
	a := open(t, natstest.Connect(t, ns), "a")
	defer a.Close(ctx)
	for round := range 10 {
		stored := make(chan struct{})
		a.Join("ORDERS", "billing", func(int) {}, func() { close(stored) })
		select {
		case <-stored:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: never told the join was stored", round)
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := b.CatchUp(cctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if n := bBilling.get(); n != 2 {
			t.Fatalf("round %d: b caught up after a's join was stored and counts %d; want 2", round, n)
		}
		if peers, err := b.Peers(ctx, "ORDERS", "billing"); err != nil || len(peers) != 1 || peers[0] != "a" {
			t.Fatalf("round %d: b names %v (%v) as billing's other replicas; want a", round, peers, err)
		}
		a.Leave("ORDERS", "billing")
		cctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		natstest.Eventually(t, 10*time.Second, "b sees a leave", func() bool { return b.CatchUp(cctx) == nil && bBilling.get() == 1 })
		cancel()
	}
}

// A roster closed says so to CatchUp at once: its watch will not move
// again, and a reset's word told while the replica closes does not wait
// out its time for it.
func TestCatchUpOnAClosedRosterReturnsAtOnce(t *testing.T) {
	ns := natstest.Start(t)
	ctx := context.Background()
	a := open(t, natstest.Connect(t, ns), "a")
	join(t, a, "ORDERS", "billing")
	a.Close(ctx) // deletes its keys: revisions its watch never sees
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := a.CatchUp(cctx)
	if err == nil || cctx.Err() != nil || !strings.Contains(err.Error(), "ended") {
		t.Fatalf("CatchUp on a closed roster: %v (context: %v); want the watch's end at once", err, cctx.Err())
	}
}

// A replica that keeps running stays on the roster past its keys' TTL.
func TestRosterRenewsItsKeys(t *testing.T) {
	ns := natstest.Start(t)
	ctx := context.Background()
	a := open(t, natstest.Connect(t, ns), "a")
	defer a.Close(ctx)
	b := open(t, natstest.Connect(t, ns), "b")
	defer b.Close(ctx)
	aSees := join(t, a, "ORDERS", "billing")
	join(t, b, "ORDERS", "billing")
	natstest.Eventually(t, 5*time.Second, "a sees b", func() bool { return aSees.get() == 2 })

	// Past one TTL and a renewal, the count never drops.
	until := time.Now().Add(roster.TTL + roster.RenewEvery)
	for time.Now().Before(until) {
		if n := aSees.get(); n != 2 {
			t.Fatalf("count fell to %d while both replicas ran", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// What the roster costs the NATS server does not grow with the consumers a
// replica serves: one liveness key renewed, and the list of what it serves
// written when that changes, not per consumer.
func TestRosterWritesDoNotGrowWithConsumers(t *testing.T) {
	ns := natstest.Start(t)
	ctx := context.Background()
	watch := natstest.Connect(t, ns)
	var mu sync.Mutex
	puts := 0
	sub, err := watch.Subscribe("$KV."+roster.Bucket+".>", func(*nats.Msg) { mu.Lock(); puts++; mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	a := open(t, natstest.Connect(t, ns), "a")
	defer a.Close(ctx)
	b := open(t, natstest.Connect(t, ns), "b")
	defer b.Close(ctx)
	const n = 300
	counts := make([]*count, n)
	for i := range n {
		name := fmt.Sprintf("c%d", i)
		counts[i] = join(t, a, "ORDERS", name)
		join(t, b, "ORDERS", name)
	}
	for i := range n {
		natstest.Eventually(t, 5*time.Second, "a sees b on every consumer", func() bool { return counts[i].get() == 2 })
	}
	mu.Lock()
	joined := puts
	mu.Unlock()
	// Two liveness keys and, binding 300 consumers each, a few writes of what
	// each serves (they are spaced by writeGap), not 600.
	if joined > 40 {
		t.Fatalf("joining 300 consumers on 2 replicas wrote %d keys", joined)
	}
	t.Logf("2 replicas joining 300 consumers each: %d KV writes", joined)
}
