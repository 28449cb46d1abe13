package push_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/push"
)

// With concurrency 1, the retrier pushing a failed batch again while a
// worker pushes a new one: the worker's request waited for the one
// connection allowed (MaxConnsPerHost = concurrency), and that wait was
// taken from its timeout. A healthy endpoint answering within the timeout
// saw the new batch cut short and pushed twice.
func TestTheRetriersBatchCountsAgainstConcurrency(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	rc.answerWith(func(n int, p pushed, w http.ResponseWriter) {
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		select {
		case <-time.After(700 * time.Millisecond):
		case <-p.ctx.Done():
			t.Logf("jetgate hung up on %s after %v of the endpoint's 700ms", p.header.Get("Webhook-Id"), time.Since(p.at).Round(time.Millisecond))
		}
	})
	pc := batched(rc.URL, push.Batch{MaxMessages: 3, MaxWait: 10 * time.Millisecond})
	pc.Concurrency, pc.Timeout = 1, time.Second
	pc.RetryMin, pc.RetryMax = 50*time.Millisecond, 100*time.Millisecond
	e.replica(consumerCfg(func(c *consumer.Config) { c.AckWait = 10 * time.Second }), pc)
	e.publish("orders.new", "a", nil) // A: one message, two leases left
	rc.next(t, 10*time.Second)        // A, 503
	rc.next(t, 10*time.Second)        // A again, by the retrier (700ms)
	for i := range 2 {
		e.publish("orders.new", fmt.Sprint(10+i), nil)
	}
	ids := map[string]int{}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case p := <-rc.got:
			ids[p.header.Get("Webhook-Id")]++
			for id, k := range ids {
				if k > 1 {
					t.Fatalf("batch %s pushed %d times by a healthy endpoint (pushes %v)", id, k, ids)
				}
			}
		case <-deadline:
			t.Logf("pushes %v", ids)
			e.drained(5 * time.Second)
			return
		}
	}
}
