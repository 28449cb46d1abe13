package push_test

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/push"
)

// A poison message at concurrency 1 holds the pusher's one lease: only
// another message's push tells whether it fails on its own or the endpoint
// is down, and none came, for the stream had no room for one. It was tried
// again at its first delivery for ever, with growing delays, and nothing
// else was pushed. Now the pusher, with nothing to push but failures
// waiting for a verdict, has the stream pull one message more: the others
// go out, and the poison reaches max_deliver and its dead letter.
func TestAPoisonAtConcurrencyOneStopsNothing(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	var mu sync.Mutex
	acked := map[string]bool{}
	rc.answerWith(func(_ int, p pushed, w http.ResponseWriter) {
		if string(p.body) == "poison" {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		mu.Lock()
		acked[string(p.body)] = true
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	e.replica(consumerCfg(func(c *consumer.Config) { c.MaxDeliver = 2; c.AckWait = 5 * time.Second }),
		push.Config{URL: rc.URL, Concurrency: 1, RetryMin: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond})
	poison := e.publish("orders.new", "poison", nil)
	published := 0
	for ; len(e.deadLetters()) == 0; published++ {
		if published == 50 {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("the poison not dead-lettered within 50 requests; %d of %d others pushed", len(acked), published)
		}
		e.publish("orders.new", fmt.Sprint("c", published), nil)
		rc.next(t, 10*time.Second)
	}
	e.drained(10 * time.Second)
	dl := e.deadLetters()
	if len(dl) != 1 || dl[0].Header.Get("Jetgate-Dead-Seq") != fmt.Sprint(poison) || dl[0].Header.Get("Jetgate-Dead-Reason") != "MAX_DELIVERIES" {
		t.Fatalf("dead letters %v; want one, the poison's (seq %d), at MAX_DELIVERIES", dl, poison)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(acked) != published {
		t.Fatalf("%d of the %d other messages pushed", len(acked), published)
	}
}

// A batch that fails with a poison in it at concurrency 1 holds every lease
// the pusher may (failed batches over half of them stopped the stream
// pulling just as well): the pusher pulls one message more, whose batch
// succeeds, and the poison's batch-mates go out, while the poison, alone
// from then on, reaches its dead letter.
func TestAFailedBatchHoldingEveryLeaseStopsNothing(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	rc.answerWith(func(_ int, p pushed, w http.ResponseWriter) {
		for _, el := range elements(t, p) {
			if string(el.Data) == "poison" {
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
		}
		w.WriteHeader(http.StatusNoContent)
	})
	poison := e.publish("orders.new", "poison", nil)
	for i := range 3 {
		e.publish("orders.new", fmt.Sprint("mate", i), nil)
	}
	pc := batched(rc.URL, push.Batch{MaxMessages: 4, MaxWait: 50 * time.Millisecond})
	pc.Concurrency = 1
	e.replica(consumerCfg(func(c *consumer.Config) { c.MaxDeliver = 2; c.AckWait = 5 * time.Second }), pc)
	if els := elements(t, rc.next(t, 10*time.Second)); len(els) != 4 {
		t.Fatalf("the first batch holds %d; want the 4 published before the pusher started", len(els))
	}
	trickleUntilPoisonDead(t, e, rc, poison)
}

// An endpoint down at concurrency 1 still costs no delivery: the message
// the pusher pulls beyond its one lease fails too, which holds the endpoint
// back, and no third is pulled while it is; once the endpoint answers,
// every message arrives at its first delivery.
func TestAnOutageAtConcurrencyOneBurnsNoDeliveries(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	var up atomic.Bool
	rc.answerWith(func(_ int, _ pushed, w http.ResponseWriter) {
		if !up.Load() {
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
	const n = 20
	for i := range n {
		e.publish("orders.new", fmt.Sprint(i), nil)
	}
	r, _ := e.replica(consumerCfg(func(c *consumer.Config) { c.MaxDeliver = 2; c.AckWait = 2 * time.Second }),
		push.Config{URL: rc.URL, Concurrency: 1, RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond})
	natstest.Eventually(t, 10*time.Second, "held back", func() bool { return !pushState(t, r).EndpointUp })
	for len(rc.got) > 0 { // those before the hold
		<-rc.got
	}
	tried := map[string]bool{}
	for range 50 { // tries while held back, past an ack_wait: the leases are extended
		tried[rc.next(t, 10*time.Second).header.Get("Webhook-Id")] = true
	}
	if ci := e.info(); len(tried) != 2 || ci.NumAckPending != 2 || ci.NumRedelivered != 0 {
		t.Fatalf("held back: %d messages tried, %d leased, %d redelivered; want 2, 2 and 0", len(tried), ci.NumAckPending, ci.NumRedelivered)
	}
	up.Store(true)
	seen := map[string]bool{}
	for len(seen) < n {
		p := rc.next(t, 10*time.Second)
		if p.header.Get("Jetgate-Delivered") != "1" {
			t.Fatalf("%s arrived as delivery %s: the outage cost deliveries", p.header.Get("Webhook-Id"), p.header.Get("Jetgate-Delivered"))
		}
		seen[p.header.Get("Webhook-Id")] = true
	}
	e.drained(10 * time.Second)
	if dl := e.deadLetters(); len(dl) != 0 {
		t.Fatalf("%d dead letters", len(dl))
	}
}
