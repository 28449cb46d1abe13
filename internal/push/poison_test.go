package push_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/push"
)

// Messages that fail on their own, fast, while the others succeed slowly,
// are nak'ed and dead-lettered after max_deliver, each delivery pushed a
// handful of times at most. Three of them used to hold the endpoint back before
// the slower successes came in; each success then put them back unnak'ed,
// to fail and hold it back again, round and round: their deliveries never
// counted, nothing dead-lettered, and the good messages went out as
// probes.
func TestMessagesFailingFastWhileOthersSucceedSlowlyAreDeadLettered(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	var mu sync.Mutex
	pushes := make(map[string]int) // of each delivery of a failing message
	rc.answerWith(func(_ int, p pushed, w http.ResponseWriter) {
		if string(p.body) == "bad" {
			mu.Lock()
			pushes[p.header.Get("Webhook-Id")+" delivery "+p.header.Get("Jetgate-Delivered")]++
			mu.Unlock()
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		time.Sleep(50 * time.Millisecond) // a slow endpoint: the failures come while these run
	})
	e.replica(consumerCfg(func(c *consumer.Config) { c.AckWait = 5 * time.Second }),
		push.Config{URL: rc.URL, Concurrency: 8, RetryMin: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond})
	for range 3 {
		e.publish("orders.new", "bad", nil)
	}
	// Good messages keep coming: only a success after a failure tells it
	// was the message's own.
	deadline := time.Now().Add(30 * time.Second)
	for len(e.deadLetters()) < 3 {
		if time.Now().After(deadline) {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("%d of the 3 failing messages dead-lettered in 30s; their pushes: %v", len(e.deadLetters()), pushes)
		}
		for range 4 {
			e.publish("orders.new", "good", nil)
		}
		rc.next(t, 10*time.Second) // pushed as fast as they come
		for len(rc.got) > 0 {
			<-rc.got
		}
	}
	for _, dl := range e.deadLetters() {
		if r := dl.Header.Get("Jetgate-Dead-Reason"); r != "MAX_DELIVERIES" {
			t.Errorf("dead letter of %s: %s; want MAX_DELIVERIES", dl.Header.Get("Jetgate-Dead-Seq"), r)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for d, n := range pushes {
		// Pushed, tried as the endpoint was held back (while a slow good
		// one was), pushed again once it was not: a handful. Round and
		// round, it was up to 33.
		if n > 6 {
			t.Errorf("%s pushed %d times; want 6 at most (all: %v)", d, n, pushes)
		}
	}
	if len(pushes) < 3*4 || !strings.Contains(strings.Join(keys(pushes), ","), "delivery 4") {
		t.Errorf("pushes of the failing messages: %v; want each delivery of the three up to max_deliver 4", pushes)
	}
}

func keys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
