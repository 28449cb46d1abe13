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
	rc := newReceiver(t)
	var wpis atomic.Int64
	nc := natstest.Connect(t, e.ns)
	if _, err := nc.Subscribe("$JS.ACK."+stream+"."+name+".>", func(m *nats.Msg) {
		if string(m.Data) == "+WPI" {
			wpis.Add(1)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	held := make(chan int64, 1)
	rc.answerWith(func(n int, p pushed, w http.ResponseWriter) {
		if n == 1 {
			start := wpis.Load()
			<-p.ctx.Done()
			held <- wpis.Load() - start
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	e.replica(consumerCfg(func(c *consumer.Config) { c.AckWait = time.Second }),
		push.Config{URL: rc.URL, Concurrency: 1, Timeout: 3 * time.Second, RetryMin: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond})
	e.publish("orders.new", "m", nil)
	n := <-held
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
	rc := newReceiver(t)
	var pulls atomic.Int64
	nc := natstest.Connect(t, e.ns)
	if _, err := nc.Subscribe("$JS.API.CONSUMER.MSG.NEXT."+stream+"."+name, func(*nats.Msg) { pulls.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	held := make(chan int64, 1)
	rc.answerWith(func(n int, p pushed, w http.ResponseWriter) {
		if n == 1 {
			start := pulls.Load()
			<-p.ctx.Done()
			held <- pulls.Load() - start
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	e.replica(consumerCfg(func(c *consumer.Config) { c.AckWait = time.Second }),
		push.Config{URL: rc.URL, Concurrency: 2, Timeout: 3 * time.Second, RetryMin: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond})
	e.publish("orders.new", "m", nil)
	n := <-held
	t.Logf("%d pull requests over a 3s push at ack_wait 1s, the stream empty", n)
	if n > 30 {
		t.Fatalf("%d pull requests over a 3s push held at ack_wait 1s: the stream's pulls spin with auto_extend", n)
	}
}
