package push_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/push"
	"github.com/jetgate/jetgate/internal/replica"
)

// A paused consumer pushes nothing; resumed, it pushes what waited.
func TestPauseStopsPushingAndResumeRestarts(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	e.replica(consumerCfg(), push.Config{URL: rc.URL})
	if _, err := e.js.PauseConsumer(context.Background(), stream, name, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	e.publish("orders.new", "x", nil)
	rc.none(t, 1500*time.Millisecond)
	if _, err := e.js.ResumeConsumer(context.Background(), stream, name); err != nil {
		t.Fatal(err)
	}
	rc.next(t, 5*time.Second)
	e.drained(5 * time.Second)
}

// A replica that stops gives back what it could not finish: another
// replica pushes those messages at once, long before ack_wait.
func TestAStoppedReplicaHandsBackWhatItHeld(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	var first atomic.Bool // the first replica's pushes are never answered
	first.Store(true)
	rc.answerWith(func(_ int, p pushed, w http.ResponseWriter) {
		if first.Load() {
			<-p.ctx.Done()
		}
	})
	cc := consumerCfg(func(c *consumer.Config) { c.AckWait = 30 * time.Second })
	_, stop := e.replica(cc, push.Config{URL: rc.URL, Concurrency: 4})
	for i := range 10 {
		e.publish("orders.new", fmt.Sprint(i), nil)
	}
	for range 3 { // at least: the stream pulls again once half its room is free
		rc.next(t, 5*time.Second)
	}
	first.Store(false)
	stop() // a second's grace, then the pushes in flight are cut
	e.replica(cc, push.Config{URL: rc.URL, Concurrency: 4})
	start := time.Now()
	e.drained(10 * time.Second)
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("took %v: waited for ack_wait", took)
	}
}

// /metrics counts each outcome and shows the endpoint up or held back.
func TestPushMetrics(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	rc.answerWith(func(_ int, p pushed, w http.ResponseWriter) {
		if string(p.body) == "bad" {
			w.WriteHeader(http.StatusBadRequest)
		}
	})
	reg := prometheus.NewRegistry()
	cc := consumerCfg()
	r, err := replica.New(context.Background(), replica.Options{
		Conn: natstest.Connect(t, e.ns), Consumers: []consumer.Config{cc},
		Pushes: []push.Config{{Stream: stream, Consumer: name, URL: rc.URL}}, Keys: keyring, Metrics: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	e.publish("orders.new", "good", nil)
	e.publish("orders.new", "bad", nil)
	e.drained(5 * time.Second)
	want := `
# HELP jetgate_push_endpoint_up 1 while the endpoint takes pushes, 0 while it is held back (one request at a time).
# TYPE jetgate_push_endpoint_up gauge
jetgate_push_endpoint_up{consumer="shipping",stream="ORDERS"} 1
# HELP jetgate_push_requests_total Pushed messages by outcome: acked (2xx), retried (to be pushed again), terminated (a final 4xx); a batch counts each of its messages.
# TYPE jetgate_push_requests_total counter
jetgate_push_requests_total{consumer="shipping",outcome="acked",stream="ORDERS"} 1
jetgate_push_requests_total{consumer="shipping",outcome="retried",stream="ORDERS"} 0
jetgate_push_requests_total{consumer="shipping",outcome="terminated",stream="ORDERS"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "jetgate_push_endpoint_up", "jetgate_push_requests_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, "jetgate_push_duration_seconds"); n != 1 {
		t.Fatalf("%d duration series", n)
	}
}
