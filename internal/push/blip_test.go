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

// A push in flight when NATS goes away and comes back keeps its lease: the
// push stream that ended leaves it kept alive for as long as a request may
// run (DESIGN section 11), so the server does not redeliver it, nor is it
// pushed again, while the request runs; its 2xx then acks it.
func TestAPushInFlightThroughANATSRestartKeepsItsLease(t *testing.T) {
	dir := t.TempDir()
	ns := natstest.StartIn(t, dir, -1)
	port := ns.Addr().(*net.TCPAddr).Port
	fast := []nats.Option{nats.ReconnectWait(50 * time.Millisecond), nats.MaxReconnects(-1)}
	e := newEnvOn(t, ns, fast...)
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
		func(o *replica.Options) { o.Conn = natstest.Connect(t, ns, fast...) })
	e.publish("orders.new", "x", nil)
	rc.next(t, 5*time.Second)
	ns.Shutdown()
	ns.WaitForShutdown()
	e.ns = natstest.StartIn(t, dir, port)
	rc.none(t, 3*ackWait) // a lease left to lapse comes back, and is pushed again
	close(release)
	e.drained(10 * time.Second)
	if ci := e.info(); ci.NumRedelivered != 0 {
		t.Fatalf("%d redelivered while the push ran through the restart", ci.NumRedelivered)
	}
}
