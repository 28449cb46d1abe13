package push_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/push"
)

// At the least ack_wait (1s), one lease whose push the endpoint holds for
// the pusher's 3s timeout costs a handful of +WPIs (11; 7 when auto_extend
// renewed a third of the wait before the deadline). A first form of the
// lead that outlasts a NATS restart's lost second (0.8s, longer than the
// lease's 0.75s) renewed it again at once: 452–498 (a reviewer's test).
func TestAShortAckWaitDoesNotSpinItsExtends(t *testing.T) {
	e := newEnv(t)
	wpis := e.count("$JS.ACK."+stream+"."+name+".>", func(m *nats.Msg) bool { return string(m.Data) == "+WPI" })
	n := e.whileAPushIsHeld(1, wpis)
	t.Logf("%d +WPIs for one lease over a 3s push at ack_wait 1s", n)
	if n > 30 { // a third of the wait as lead: 7
		t.Fatalf("%d +WPIs for one lease over a 3s push at ack_wait 1s: auto_extend spins (its lead, 0.8s, is longer than the lease, 0.75s)", n)
	}
	e.drained(10 * time.Second)
	if ci := e.info(); ci.NumRedelivered != 0 {
		t.Fatalf("redelivered %d", ci.NumRedelivered)
	}
}

// The same at concurrency 2, one push held and the stream empty: the stream
// pulls for its room, each pull's expiry bounded by when the next lease is
// due to be extended: 14 pulls in 3s (11 before; 138 with the first form of
// the lead, a reviewer's test).
func TestAShortAckWaitDoesNotSpinThePulls(t *testing.T) {
	e := newEnv(t)
	n := e.whileAPushIsHeld(2, e.count("$JS.API.CONSUMER.MSG.NEXT."+stream+"."+name, nil))
	t.Logf("%d pull requests over a 3s push at ack_wait 1s, the stream empty", n)
	if n > 30 {
		t.Fatalf("%d pull requests over a 3s push held at ack_wait 1s: the stream's pulls spin with auto_extend", n)
	}
}

// count counts the messages on subject that match (nil: all), on a
// connection of its own, from the moment it returns.
func (e *env) count(subject string, match func(*nats.Msg) bool) *atomic.Int64 {
	e.t.Helper()
	n := new(atomic.Int64)
	nc := natstest.Connect(e.t, e.ns)
	if _, err := nc.Subscribe(subject, func(m *nats.Msg) {
		if match == nil || match(m) {
			n.Add(1)
		}
	}); err != nil {
		e.t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// whileAPushIsHeld pushes one message at ack_wait 1s with concurrency
// workers, the endpoint holding its push for the pusher's whole 3s
// timeout, and returns how far counter moved meanwhile.
func (e *env) whileAPushIsHeld(concurrency int, counter *atomic.Int64) int64 {
	rc := newReceiver(e.t)
	held := make(chan int64, 1)
	rc.answerWith(func(n int, p pushed, w http.ResponseWriter) {
		if n == 1 {
			start := counter.Load()
			<-p.ctx.Done()
			held <- counter.Load() - start
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	e.replica(consumerCfg(func(c *consumer.Config) { c.AckWait = time.Second }),
		push.Config{URL: rc.URL, Concurrency: concurrency, Timeout: 3 * time.Second, RetryMin: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond})
	e.publish("orders.new", "m", nil)
	return <-held
}
