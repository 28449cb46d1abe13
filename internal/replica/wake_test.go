package replica

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/token"
)

// After a gap in its own clock (the process stopped), a replica settles
// nothing until it has handled what NATS sent it before: a reset request
// that passed while it could not run voids its leases first. Here the gap
// is made by setting the watch's last tick back, and the reset request is
// published just before the catch-up: once catchUp returns, the consumer
// has noticed the reset. Without a gap, catchUp asks nothing of NATS.
func TestASettleAfterAPauseWaitsForWhatNATSSentMeanwhile(t *testing.T) {
	r, nc, ctx := billingReplica(t, 0)
	c := r.bound("ORDERS", "billing")
	if r.relay.wakes.behind(time.Now()) {
		t.Fatal("a replica just started is behind; want it caught up")
	}
	for i := range 20 {
		r.relay.wakes.tick(time.Now().Add(-5 * time.Second)) // asleep 5s
		before := c.Counts().Resets.Load()
		if err := nc.PublishRequest("$JS.API.CONSUMER.RESET.ORDERS.billing", nc.NewInbox(), nil); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := r.relay.catchUp(ctx); err != nil {
			t.Fatalf("catch up: %v", err)
		}
		if got := c.Counts().Resets.Load(); got != before+1 {
			t.Fatalf("round %d: after catching up, %d resets noticed; want %d: the reset request published before was not handled first", i, got, before+1)
		}
		if r.relay.wakes.behind(time.Now()) {
			t.Fatalf("round %d: still behind after catching up", i)
		}
	}
}

// A settle waits until the relay has handled what it had received: an
// update request that cuts leases short, or a reset request, is handled on
// its subscription's goroutine, and a settle that overtook it would land on
// the redelivery the change made. Here a relay handler holds a message
// until released: catchUp waits for it, and gives up UNAVAILABLE after the
// request timeout while it is held; once it is released, catchUp returns.
func TestASettleWaitsForWhatTheRelayHasInHand(t *testing.T) {
	r, nc, ctx := billingReplica(t, 300*time.Millisecond)
	if err := r.relay.catchUp(ctx); err != nil {
		t.Fatalf("catch up with nothing in hand: %v", err)
	}
	release, handled := holdInRelay(t, r, nc)
	if err := r.relay.catchUp(ctx); !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("catch up while a handler holds a message: %v; want UNAVAILABLE after the request timeout", err)
	}
	release()
	if err := r.relay.catchUp(ctx); err != nil {
		t.Fatalf("catch up once the handler let go: %v", err)
	}
	if handled.Load() != 1 {
		t.Fatalf("catchUp returned with the message not handled")
	}
}

// holdInRelay adds to r's relay a subscription whose handler holds the one
// message nc publishes to it until release is called, and returns once the
// handler has it: the relay has a message in hand, as it has a reset
// request its handler has not run for yet.
func holdInRelay(t *testing.T, r *Replica, nc *nats.Conn) (release func(), handled *atomic.Int64) {
	t.Helper()
	held, handled := make(chan struct{}), new(atomic.Int64)
	sub, err := r.nc.Subscribe("test.held", func(*nats.Msg) {
		defer handled.Add(1)
		<-held
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	r.relay.subs, r.relay.handled = append(r.relay.subs, sub), append(r.relay.handled, handled)
	if err := nc.Publish("test.held", nil); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 5*time.Second, "the message in the handler's hand", func() bool {
		n, _ := sub.Delivered()
		return n == 1
	})
	var once sync.Once
	release = func() { once.Do(func() { close(held) }) }
	t.Cleanup(release)
	return release, handled
}

// billingReplica starts a replica serving ORDERS/billing (a request
// timeout of timeout, 0 for the default) on a NATS server of its own, and
// returns it, another connection to that server, and a context for the
// test's calls.
func billingReplica(t *testing.T, timeout time.Duration) (*Replica, *nats.Conn, context.Context) {
	t.Helper()
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	r, err := New(ctx, Options{Conn: natstest.Connect(t, ns), Keys: token.RandomKeyring(), RequestTimeout: timeout,
		Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing"}}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r, nc, ctx
}

// When the connection to NATS is made again, the server may have restarted,
// and one that did redelivers what awaits an ack by times it kept to the
// second: every lease the replica holds ends a second sooner, before any
// settle, and the tokens' deadlines no longer promise it (a settle then is
// judged by the new deadline). Here NATS (file store) restarts on its port
// while a message is leased.
func TestAReconnectShortensTheLeasesHeld(t *testing.T) {
	dir := t.TempDir()
	ns := natstest.StartIn(t, dir, -1)
	port := ns.Addr().(*net.TCPAddr).Port
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn := natstest.Connect(t, ns, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond), nats.ReconnectBufSize(-1))
	r, c, res := leaseOne(t, ctx, conn, nc)
	before := c.Holders()[0].Latest
	if !before.Equal(res.Messages[0].Deadline) {
		t.Fatalf("the table's deadline %v, the message's %v", before, res.Messages[0].Deadline)
	}

	ns.Shutdown()
	ns.WaitForShutdown()
	natstest.StartIn(t, dir, port)
	natstest.Eventually(t, 20*time.Second, "the replica reconnected", func() bool { return conn.Stats().Reconnects >= 1 && conn.IsConnected() })
	if err := r.relay.catchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Holders()[0].Latest, before.Add(-lease.RestorePrecision); !got.Equal(want) {
		t.Fatalf("after the reconnect the lease ends at %v; want %v, a second sooner", got, want)
	}
	if err := r.relay.catchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Holders()[0].Latest, before.Add(-lease.RestorePrecision); !got.Equal(want) {
		t.Fatalf("a second settle after the same reconnect moved the lease to %v; want it left at %v", got, want)
	}
}

// nats.go counts a reconnect as its TCP connection is made, before the
// handshake, so a NATS behind a proxy that drops the traffic makes many
// reconnects of a single outage: the leases are cut once, by a second, once
// the connection is up again.
func TestAnOutageOfManyReconnectTriesCutsTheLeasesOnce(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	proxy := natstest.StartProxy(t, ns.Addr().String())
	conn := proxy.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, c, _ := leaseOne(t, ctx, conn, nc)
	before := c.Holders()[0].Latest

	proxy.Blackhole()
	if err := conn.ForceReconnect(); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 20*time.Second, "several reconnect tries through the dead proxy", func() bool { return conn.Stats().Reconnects >= 3 })
	if got := c.Holders()[0].Latest; !got.Equal(before) {
		t.Fatalf("the lease was cut to %v while the connection was still down; want it left until it is up", got)
	}
	proxy.Thaw()
	natstest.Eventually(t, 20*time.Second, "connected again", conn.IsConnected)
	if err := r.relay.catchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Holders()[0].Latest, before.Add(-lease.RestorePrecision); !got.Equal(want) {
		t.Fatalf("after an outage of %d reconnect tries the lease ends at %v; want %v, a second sooner, once", conn.Stats().Reconnects, got, want)
	}
}

// leaseOne starts a replica on conn serving ORDERS/billing (ack_wait 30s),
// publishes a message with nc and fetches it through the replica.
func leaseOne(t *testing.T, ctx context.Context, conn, nc *nats.Conn) (*Replica, *consumer.Consumer, consumer.FetchResult) {
	t.Helper()
	r, err := New(ctx, Options{Conn: conn, Keys: token.RandomKeyring(),
		Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing", AckWait: 30 * time.Second}}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "orders.1", []byte("m")); err != nil {
		t.Fatal(err)
	}
	res, err := r.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("fetch: %v %v", res, err)
	}
	return r, r.bound("ORDERS", "billing"), res
}

// A catch-up covers what NATS sent before it began, not what came after:
// one begun before the process stopped (its PING sent, its PONG first in
// the socket once the process runs again, ahead of what piled up behind
// it) leaves the replica behind, and the next settle catches up again.
// Found by TestFaultReplicaStoppedThroughAReset on a loaded machine: a
// settle in flight as the replica stopped caught up before the stop and
// marked the replica caught up after it, and the settles that had waited
// in its socket went by the reset's word behind the PONG.
func TestACatchUpBegunBeforeAGapLeavesTheReplicaBehind(t *testing.T) {
	var w wakes
	start := time.Now()
	w.begin(start)
	w.tick(start)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	for ms := time.Duration(0); ms <= 900*time.Millisecond; ms += tickEvery {
		w.ticked(at(ms), at(ms))
	}
	if w.behind(at(950 * time.Millisecond)) {
		t.Fatal("behind with the watch ticking on time")
	}

	// A settle begins catching up at 2s, under a gap the watch has not
	// seen yet (its ticks starved): the process stops from then to 4s.
	began := at(2 * time.Second)
	if !w.behind(began) {
		t.Fatal("not behind 1.1s after the watch's last tick")
	}
	// The watch's first tick after the stop carries the time it was due;
	// the next one the time it runs, and it sees the gap.
	w.ticked(at(2100*time.Millisecond), at(4*time.Second))
	w.ticked(at(4100*time.Millisecond), at(4100*time.Millisecond))
	w.caughtUp(began) // the settle's PONG, read first after the stop
	if !w.behind(at(4150 * time.Millisecond)) {
		t.Fatal("a catch-up begun before the stop marked the replica caught up after it")
	}
	w.caughtUp(at(4150 * time.Millisecond))
	if w.behind(at(4200 * time.Millisecond)) {
		t.Fatal("behind after a catch-up begun once the gap had ended")
	}
	w.ticked(at(4200*time.Millisecond), at(4200*time.Millisecond))
	if w.behind(at(4250 * time.Millisecond)) {
		t.Fatal("behind after the watch ticked on time again")
	}
	// The host suspended: the monotonic clock stood still while the wall
	// clock went on. That gap counts too.
	w.lastWall.Add(-int64(3 * time.Second))
	if !w.behind(at(4300 * time.Millisecond)) {
		t.Fatal("a gap on the wall clock alone left the replica caught up")
	}
}
