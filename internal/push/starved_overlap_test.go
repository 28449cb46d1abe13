package push_test

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/push"
)

// A starved pusher's extra message, brought by its stream's pull while the
// retrier tries the failure again, waits for that try: at concurrency 1 the
// endpoint never has two requests at once. It had (a reviewer's test, over
// HTTP/2, which carries both on the one connection allowed; every run): a
// worker took the message at once, the retrier's push uncounted. Batches
// take a place each (mayGo); single pushes now count against concurrency.
func TestAStarvedPushersExtraMessageWaitsForTheRetry(t *testing.T) {
	e := newEnv(t)
	ep := newEndpoint(t, false, false)
	var inHandler, most atomic.Int64
	bSeen := make(chan struct{}, 100)
	var mu sync.Mutex
	poisonTries := 0
	retryHeld := make(chan struct{}, 100)
	ep.answerWith(func(_ int, p pushed, w http.ResponseWriter) {
		now := inHandler.Add(1)
		defer inHandler.Add(-1)
		for {
			m := most.Load()
			if now <= m || most.CompareAndSwap(m, now) {
				break
			}
		}
		if string(p.body) != "poison" {
			bSeen <- struct{}{}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		mu.Lock()
		poisonTries++
		n := poisonTries
		mu.Unlock()
		if n >= 3 { // a retry once the pusher is starved: hold it until another message arrives, or it is cut
			retryHeld <- struct{}{}
			select {
			case <-bSeen:
				bSeen <- struct{}{}
			case <-p.ctx.Done():
			}
		}
		w.WriteHeader(http.StatusInternalServerError)
	})
	e.replica(consumerCfg(func(c *consumer.Config) { c.MaxDeliver = 20; c.AckWait = 5 * time.Second }),
		push.Config{URL: ep.URL, HTTP2: true, Concurrency: 1, Timeout: 2 * time.Second, RetryMin: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond})
	e.publish("orders.new", "poison", nil)
	for round := range 6 { // each round's check covers the message the round before published
		select {
		case <-retryHeld:
		case <-time.After(10 * time.Second):
			t.Fatal("no held retry of the poison")
		}
		if most.Load() > 1 {
			t.Fatalf("round %d: %d requests at the endpoint at once at concurrency 1 (the poison's retry and the starved pusher's extra message)", round, most.Load())
		}
		if round < 5 {
			e.publish("orders.new", fmt.Sprint("b", round), nil)
		}
	}
}
