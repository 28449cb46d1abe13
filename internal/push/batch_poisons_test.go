package push_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/push"
)

// Three poison messages published together (one batch), with steady other
// traffic, at concurrency 1, are dead-lettered at max_deliver, each pushed
// a few times a delivery. Pushed alone after their batch failed, they fail
// in a row: counted towards holding the endpoint back, they held it, the
// hold's end (a good message's probe) put them back afresh, unnak'ed, and
// so round and round, none reaching max_deliver (a reviewer's test: 53
// pushes each, all of delivery 2). A message pushed alone for failing on
// its own before holds nothing back now.
func TestSeveralPoisonsInOneBatchAreDeadLettered(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	var mu sync.Mutex
	pushes := map[string]int{} // of each delivery of a poison
	rc.answerWith(func(_ int, p pushed, w http.ResponseWriter) {
		bad := false
		for _, el := range elements(t, p) {
			if string(el.Data) == "poison" {
				bad = true
				mu.Lock()
				pushes[el.ID+" delivery "+el.Metadata.NumDelivered]++
				mu.Unlock()
			}
		}
		if bad {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	pc := batched(rc.URL, push.Batch{MaxMessages: 10, MaxWait: 50 * time.Millisecond})
	pc.Concurrency = 1
	e.replica(consumerCfg(func(c *consumer.Config) { c.AckWait = 5 * time.Second }), pc)
	const poisons = 3
	for range poisons {
		e.publish("orders.new", "poison", nil)
	}
	for i := 0; len(e.deadLetters()) < poisons; i++ {
		if i == 200 {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("%d of the %d poisons dead-lettered within 200 requests; their pushes: %v", len(e.deadLetters()), poisons, pushes)
		}
		e.publish("orders.new", fmt.Sprint("c", i), nil)
		rc.next(t, 10*time.Second)
	}
	e.drained(20 * time.Second)
	if dl := e.deadLetters(); len(dl) != poisons {
		t.Errorf("%d dead letters, want %d", len(dl), poisons)
	}
	mu.Lock()
	defer mu.Unlock()
	for d, n := range pushes {
		if n > 6 {
			t.Errorf("%s pushed %d times; want 6 at most (all: %v)", d, n, pushes)
		}
	}
}

// A batch answered 500 (a poison in it), tried again once with nothing
// else to push and answered 503 that time (a busy moment), then judged its
// messages' own by a later success, goes alone next time all the same: the
// 500 counts for the delivery. (A first form kept the last failure's
// answer: the 503 wiped the 500, the batch-mates were batched with the
// poison again and, at max_deliver 2, dead-lettered beside it; a
// reviewer's test.)
func TestA500ThenA503StillSplitsTheBatch(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	rc.answerWith(func(n int, p pushed, w http.ResponseWriter) {
		for _, el := range elements(t, p) {
			if string(el.Data) == "poison" {
				if n == 2 { // the batch's first retry: a busy moment
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
		}
		w.WriteHeader(http.StatusNoContent)
	})
	e.replica(consumerCfg(func(c *consumer.Config) { c.MaxDeliver = 2; c.AckWait = 5 * time.Second }),
		batched(rc.URL, push.Batch{MaxMessages: 3, MaxWait: 50 * time.Millisecond}))
	e.publish("orders.new", "a", nil)
	poison := e.publish("orders.new", "poison", nil)
	e.publish("orders.new", "b", nil)
	if els := elements(t, rc.next(t, 10*time.Second)); len(els) != 3 {
		t.Fatalf("the first batch holds %d, want 3", len(els))
	}
	// Nothing else to push: the retrier tries the batch again (503).
	if els := elements(t, rc.next(t, 10*time.Second)); len(els) != 3 {
		t.Fatalf("the retry holds %d, want 3", len(els))
	}
	trickleUntilPoisonDead(t, e, rc, poison)
}
