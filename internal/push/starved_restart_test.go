package push_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/push"
)

// An endpoint down with one message to push, at concurrency 1 and a short
// ack_wait (2s), through two NATS restarts of a moment, costs the message no
// delivery. A restarted server counts a pending message's wait from a time
// it kept to the second: the starved stream's next pull came before the
// message's lease was extended again, and took the message itself, one
// delivery a restart (a reviewer's test: every restart; at max_deliver 2,
// dead-lettered). The stream now extends every lease it holds before it
// pulls after NATS was away, and auto_extend renews a short wait early
// enough to outlast the server's lost precision.
func TestAnOutageThroughNATSRestartsBurnsNoDeliveries(t *testing.T) {
	e, restart, reconnecting := restartableEnv(t)
	rc := newReceiver(t)
	var up atomic.Bool
	rc.answerWith(func(_ int, _ pushed, w http.ResponseWriter) {
		if !up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	e.publish("orders.new", "m", nil)
	e.replica(consumerCfg(func(c *consumer.Config) { c.MaxDeliver = 2; c.AckWait = 2 * time.Second }),
		push.Config{URL: rc.URL, Concurrency: 1, Timeout: time.Second, RetryMin: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond},
		reconnecting)
	for range 2 {
		for range 5 {
			rc.next(t, 10*time.Second)
		}
		restart()
		natstest.Eventually(t, 10*time.Second, "reconnected", e.nc.IsConnected)
		for range 60 { // tries past an ack_wait
			if p := rc.next(t, 10*time.Second); p.header.Get("Jetgate-Delivered") != "1" {
				t.Fatalf("pushed as delivery %s while the endpoint was down: a NATS restart cost a delivery", p.header.Get("Jetgate-Delivered"))
			}
		}
	}
	up.Store(true)
	e.drained(20 * time.Second)
	if ci := e.info(); ci.NumRedelivered != 0 || len(e.deadLetters()) != 0 {
		t.Fatalf("an outage through two NATS restarts: %d redelivered, %d dead letters; want none", ci.NumRedelivered, len(e.deadLetters()))
	}
}

// A starved pusher on an empty stream (a poison, nothing else to push) does
// not spin its pulls: each waits for a message as a Consume stream's does
// (a reviewer's test: 3 pull requests over 100 tries of the poison).
func TestAStarvedPusherOnAnEmptyStreamDoesNotSpin(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	rc.answerWith(func(_ int, _ pushed, w http.ResponseWriter) { w.WriteHeader(http.StatusInternalServerError) })
	pulls := e.count("$JS.API.CONSUMER.MSG.NEXT."+stream+"."+name, nil)
	e.publish("orders.new", "poison", nil)
	e.replica(consumerCfg(func(c *consumer.Config) { c.MaxDeliver = 2; c.AckWait = 5 * time.Second }),
		push.Config{URL: rc.URL, Concurrency: 1, RetryMin: 20 * time.Millisecond, RetryMax: 20 * time.Millisecond})
	rc.next(t, 10*time.Second)
	start := pulls.Load()
	const tries = 100
	for range tries {
		if d := rc.next(t, 10*time.Second).header.Get("Jetgate-Delivered"); d != "1" {
			t.Fatalf("the poison at delivery %s with nothing else to push", d)
		}
	}
	if n := pulls.Load() - start; n > tries/2 {
		t.Fatalf("%d pull requests over %d tries of the poison: the starved stream spins", n, tries)
	}
}
