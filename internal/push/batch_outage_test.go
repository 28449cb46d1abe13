package push_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/push"
)

// An outage (503 to every request) that begins while only messages marked
// to go alone are pushed (the poison's batch-mates, delivered again after
// their batch's 500) holds the endpoint back all the same, and costs them
// no delivery: only the poison is dead-lettered. (A first form counted no
// failure of a message pushed alone towards a hold: the endpoint was never
// held back, the first success after the outage judged the failures their
// messages' own, and at max_deliver 2 the batch-mates were dead-lettered
// beside the poison; a reviewer's test.)
func TestAnOutageWhileOnlyAloneJobsArePushedHoldsTheEndpoint(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	var mu sync.Mutex
	phase := 0 // 0: the poison's batch 500, others 204; 1: down, 503 to all; 2: up again
	down := 0  // requests answered 503
	deliveries := map[string][]string{}
	rc.answerWith(func(_ int, p pushed, w http.ResponseWriter) {
		poisoned := false
		mu.Lock()
		defer mu.Unlock()
		for _, el := range elements(t, p) {
			deliveries[string(el.Data)] = append(deliveries[string(el.Data)], el.Metadata.NumDelivered)
			poisoned = poisoned || string(el.Data) == "poison"
		}
		switch {
		case phase == 1:
			down++
			w.WriteHeader(http.StatusServiceUnavailable)
		case poisoned:
			w.WriteHeader(http.StatusInternalServerError)
		default:
			if phase == 0 { // the success that judges the poison's batch its own: the outage starts now
				phase = 1
			}
			w.WriteHeader(http.StatusNoContent)
		}
	})
	pc := batched(rc.URL, push.Batch{MaxMessages: 3, MaxWait: 50 * time.Millisecond})
	// The retrier's first try of the failed batch is well after the next
	// message's push.
	pc.RetryMin, pc.RetryMax = 500*time.Millisecond, time.Second
	r, _ := e.replica(consumerCfg(func(c *consumer.Config) { c.MaxDeliver = 2; c.AckWait = 5 * time.Second }), pc)
	e.publish("orders.new", "a", nil)
	poison := e.publish("orders.new", "poison", nil)
	e.publish("orders.new", "b", nil)
	if els := elements(t, rc.next(t, 10*time.Second)); len(els) != 3 {
		t.Fatalf("the first batch holds %d, want 3", len(els))
	}
	e.publish("orders.new", "c", nil) // its success naks a, poison and b, each marked to go alone
	natstest.Eventually(t, 20*time.Second, "the outage's requests", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return down >= 6
	})
	st := pushState(t, r)
	mu.Lock()
	phase = 2
	t.Logf("%d requests answered 503; endpoint up as the pusher sees it: %v", down, st.EndpointUp)
	mu.Unlock()
	if st.EndpointUp {
		t.Errorf("after 6 requests in a row answered 503, nothing else pushed, the endpoint was not held back")
	}
	// Other traffic, one message a request, until a dead letter comes: the
	// poison's, its failure judged its own by a success.
	defer func() {
		mu.Lock()
		t.Logf("deliveries seen: %v", deliveries)
		mu.Unlock()
	}()
	trickleUntilPoisonDead(t, e, rc, poison)
}
