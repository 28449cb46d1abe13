package push_test

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/push"
	"github.com/jetgate/jetgate/internal/replica"
)

// restartableEnv is an env on a NATS server that restart stops and starts
// again on the same store and port, and reconnecting gives a replica a
// connection to it that reconnects every 50ms.
func restartableEnv(t *testing.T) (e *env, restart func(), reconnecting func(*replica.Options)) {
	dir := t.TempDir()
	ns := natstest.StartIn(t, dir, -1)
	port := ns.Addr().(*net.TCPAddr).Port
	fast := []nats.Option{nats.ReconnectWait(50 * time.Millisecond), nats.MaxReconnects(-1)}
	e = newEnvOn(t, ns, fast...)
	restart = func() {
		e.ns.Shutdown()
		e.ns.WaitForShutdown()
		e.ns = natstest.StartIn(t, dir, port)
	}
	reconnecting = func(o *replica.Options) { o.Conn = natstest.Connect(t, ns, fast...) }
	return e, restart, reconnecting
}

// A push in flight when NATS goes away and comes back keeps its lease: the
// push stream that ended leaves it kept alive for as long as a request may
// run (DESIGN section 11), so the server does not redeliver it, nor is it
// pushed again, while the request runs; its 2xx then acks it.
func TestAPushInFlightThroughANATSRestartKeepsItsLease(t *testing.T) {
	e, restart, reconnecting := restartableEnv(t)
	rc := newReceiver(t)
	release := make(chan struct{})
	rc.answerWith(func(n int, p pushed, w http.ResponseWriter) {
		if n == 1 {
			select { // the endpoint still works on it
			case <-release:
			case <-p.ctx.Done():
			}
		}
	})
	const ackWait = 3 * time.Second
	e.replica(consumerCfg(func(c *consumer.Config) { c.AckWait = ackWait }), push.Config{URL: rc.URL, Concurrency: 2, Timeout: 20 * time.Second},
		reconnecting)
	e.publish("orders.new", "x", nil)
	rc.next(t, 5*time.Second)
	restart()
	rc.none(t, 3*ackWait) // a lease left to lapse comes back, and is pushed again
	close(release)
	e.drained(10 * time.Second)
	if ci := e.info(); ci.NumRedelivered != 0 {
		t.Fatalf("%d redelivered while the push ran through the restart", ci.NumRedelivered)
	}
}

// An endpoint held back through a NATS restart still costs no deliveries:
// the messages pulled and not pushed yet keep their leases through it
// (the push stream outlasts NATS going away), rather than go back to the
// server, which would redeliver each after ack_wait with one delivery
// more. Once the endpoint answers, each arrives on its first delivery.
func TestAnEndpointHeldBackThroughANATSRestartBurnsNoDeliveries(t *testing.T) {
	e, restart, reconnecting := restartableEnv(t)
	rc := newReceiver(t)
	up := make(chan struct{})
	rc.answerWith(func(_ int, _ pushed, w http.ResponseWriter) {
		select {
		case <-up:
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	const ackWait = 4 * time.Second
	r, _ := e.replica(consumerCfg(func(c *consumer.Config) { c.AckWait = ackWait }),
		push.Config{URL: rc.URL, Concurrency: 8, Timeout: time.Second, RetryMin: 50 * time.Millisecond, RetryMax: 200 * time.Millisecond},
		reconnecting)
	const n = 3 // fewer than it may hold: its stream is pulling as NATS goes
	for i := range n {
		e.publish("orders.new", string(rune('a'+i)), nil)
	}
	natstest.Eventually(t, 10*time.Second, "held back", func() bool { return !pushState(t, r).EndpointUp })
	restart()
	// Long enough after the restart, the endpoint still down, for a stream
	// that ended with NATS (its lost pull's place in line given up, its
	// leases kept alive for the push timeout) to have let its leases lapse
	// and the server to have redelivered them.
	natstest.Eventually(t, 10*time.Second, "reconnected", e.nc.IsConnected)
	wait := time.NewTimer(3 * ackWait)
	<-wait.C
	if ci := e.info(); ci.NumRedelivered != 0 {
		t.Fatalf("%d messages redelivered while the endpoint was held back through the restart", ci.NumRedelivered)
	}
	close(up)
	e.drained(10 * time.Second)
	if ci := e.info(); ci.NumRedelivered != 0 || ci.AckFloor.Stream != n {
		t.Fatalf("redelivered %d, ack floor %d of %d", ci.NumRedelivered, ci.AckFloor.Stream, n)
	}
	for len(rc.got) > 0 {
		p := <-rc.got
		if d := p.header.Get("Jetgate-Delivered"); d != "1" {
			t.Errorf("%s pushed on delivery %q; want 1", p.header.Get("Webhook-Id"), d)
		}
	}
}
