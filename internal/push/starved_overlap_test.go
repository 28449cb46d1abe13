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
	// holding: a retry of the poison is held, its answer not written yet
	// (cleared before the answer, so that what jetgate sends after it
	// never counts); overlaps: another message arrived meanwhile.
	var holding atomic.Bool
	var overlaps atomic.Int64
	other := make(chan struct{}, 100)
	var mu sync.Mutex
	poisonTries := 0
	retryHeld := make(chan struct{}, 100)
	ep.answerWith(func(_ int, p pushed, w http.ResponseWriter) {
		if string(p.body) != "poison" {
			if holding.Load() {
				overlaps.Add(1)
			}
			other <- struct{}{}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		mu.Lock()
		poisonTries++
		n := poisonTries
		mu.Unlock()
		if n >= 3 { // a retry once the pusher is starved: a slow endpoint, unless another message comes
			holding.Store(true)
			retryHeld <- struct{}{}
			select {
			case <-other:
			case <-time.After(500 * time.Millisecond):
			case <-p.ctx.Done():
			}
			holding.Store(false)
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
		if n := overlaps.Load(); n > 0 {
			t.Fatalf("round %d: %d messages pushed while the poison's retry was in flight, at concurrency 1", round, n)
		}
		if round < 5 {
			e.publish("orders.new", fmt.Sprint("b", round), nil)
		}
	}
}
