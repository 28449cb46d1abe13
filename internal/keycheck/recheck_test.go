package keycheck

import (
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetgate/jetgate/internal/natstest"
)

// A check again that cannot run (here NATS restarts, and the publish is
// refused while the connection reconnects, as a replica's is with
// ReconnectBufSize(-1)) leaves the count as it was, and the checks go on:
// it falls once the odd peer is mended. Before, such a check ended them (a
// reviewer's test).
func TestTheMismatchCountFallsAfterACheckThatCouldNotRun(t *testing.T) {
	dir := t.TempDir()
	ns := natstest.StartIn(t, dir, -1)
	port := ns.Addr().(*net.TCPAddr).Port
	b := startReplica(t, ns.ClientURL(), ring(t, "o"))
	nc, err := nats.Connect(ns.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond), nats.ReconnectBufSize(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	a := startOn(t, nc, ring(t, "n", "o"), 50*time.Millisecond)
	if a.gauge(t) != 1 {
		t.Fatalf("A's gauge %v; want 1 while B lacks the new key", a.gauge(t))
	}
	b.c.Close()
	ns.Shutdown()
	ns.WaitForShutdown()
	natstest.Eventually(t, 10*time.Second, "a recheck while NATS is away", func() bool {
		return a.logs.count("token key check not run") > 0
	})
	ns2 := natstest.StartIn(t, dir, port)
	natstest.Eventually(t, 10*time.Second, "A reconnected", nc.IsConnected)
	startReplica(t, ns2.ClientURL(), ring(t, "n", "o")) // B mended
	natstest.Eventually(t, 10*time.Second, "A's count back at 0 once B is mended", func() bool { return a.gauge(t) == 0 })
}

// A check again that the odd peer does not answer within its window (its
// connection reconnecting, a pause) counts no mismatch, but the checks go
// on and count it again: before, they stopped at the first count of 0 for
// good, the peer's key still wrong (a reviewer's test). Here B, which
// started first and so never counted A itself, misses one window.
func TestAMissedAnswerDoesNotClearTheMismatchForGood(t *testing.T) {
	ns := natstest.Start(t)
	url := ns.ClientURL()
	b := startReplica(t, url, ring(t, "o"))
	nc := natstest.Connect(t, ns)
	a := startOn(t, nc, ring(t, "n"), 50*time.Millisecond)
	if a.gauge(t) != 1 {
		t.Fatalf("A's gauge %v; want 1", a.gauge(t))
	}
	// B's interest goes for a moment (its connection reconnecting), then
	// comes back with the same, wrong, key.
	bnc := b.c.o.Conn
	if err := b.c.sub.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 10*time.Second, "a recheck without B", func() bool { return a.gauge(t) == 0 })
	var err error
	if b.c.sub, err = bnc.Subscribe(Subject, b.c.answer); err != nil {
		t.Fatal(err)
	}
	if err := bnc.Flush(); err != nil {
		t.Fatal(err)
	}
	if b.gauge(t) != 0 {
		t.Fatalf("B's own gauge %v: it started first and never counted A", b.gauge(t))
	}
	natstest.Eventually(t, 3*time.Second, "A counts B's mismatch again", func() bool { return a.gauge(t) == 1 })
}

// A check again while the replica's NATS connection is stalled (a network
// that stops forwarding; the app's pings find it within 30s) is one that
// could not run: it leaves the count. Before, the publish went into the
// socket, no answer came, and the count fell to 0 with "every peer's key
// matches now" (a reviewer's test).
func TestAStalledCheckLeavesTheCount(t *testing.T) {
	ns := natstest.Start(t)
	startReplica(t, ns.ClientURL(), ring(t, "o")) // B: the wrong key
	px := natstest.StartProxy(t, ns.Addr().String())
	a := startOn(t, px.Connect(t), ring(t, "n"), 50*time.Millisecond)
	if a.gauge(t) != 1 {
		t.Fatalf("A's gauge %v; want 1", a.gauge(t))
	}
	px.Blackhole()
	natstest.Eventually(t, 10*time.Second, "a recheck while stalled", func() bool {
		return a.logs.count("token key check not run") > 0 || a.gauge(t) == 0
	})
	if a.gauge(t) != 1 {
		t.Errorf("A's gauge %v after a recheck while its connection was stalled; want 1 (B's key is still wrong). Said: %d× \"every peer's key matches now\"",
			a.gauge(t), a.logs.count("every peer's key matches now"))
	}
}

// Every peer's answer is counted: they came into a channel of 64, and past
// about 64 answering at once nats.go dropped the rest as a slow consumer,
// the mismatched among them uncounted (a reviewer's test).
func TestManyPeersAreAllCounted(t *testing.T) {
	ns := natstest.Start(t)
	const peers = 100
	var conns []*nats.Conn
	for range peers {
		conns = append(conns, natstest.Connect(t, ns))
	}
	bad := ring(t, "o")
	for i := range peers {
		c, err := Start(Options{Conn: conns[i%len(conns)], Keys: bad, Window: 50 * time.Millisecond, Recheck: time.Hour,
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		<-c.Done()
	}
	var slow atomic.Int64
	nc := natstest.Connect(t, ns, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if err == nats.ErrSlowConsumer {
			slow.Add(1)
		}
	}))
	r := replica{logs: &logs{}, reg: prometheus.NewRegistry()}
	var err error
	r.c, err = Start(Options{Conn: nc, Keys: ring(t, "n"), Metrics: r.reg, Window: 2 * time.Second, Recheck: time.Hour,
		Logger: slog.New(slog.NewTextHandler(r.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.c.Close)
	<-r.c.Done()
	if got := r.c.Mismatched(); got != peers {
		t.Errorf("counted %d of %d mismatched peers (%s)", got, peers, fmt.Sprint("slow consumer errors seen: ", slow.Load()))
	}
}
