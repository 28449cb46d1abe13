package push_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/push"
)

// A message that fails every batch it is in (a poison one: the endpoint
// answers 500 to a batch holding it) takes no other message to
// max_deliver: those that failed with it in a batch are pushed alone when
// they come again, and acked; only the poison is dead-lettered. Before,
// its batch's messages were nak'ed with it, came back with it, were
// batched with it again, and were dead-lettered beside it (a helper's test,
// 4 of 4 runs).
func TestAPoisonMessageTakesNoOtherToMaxDeliver(t *testing.T) {
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
	e.replica(consumerCfg(), batched(rc.URL, push.Batch{MaxMessages: 3, MaxWait: 50 * time.Millisecond}))
	e.publish("orders.new", "a", nil)
	poison := e.publish("orders.new", "poison", nil)
	e.publish("orders.new", "b", nil)
	if mixed := trickleUntilPoisonDead(t, e, rc, poison); mixed > 0 {
		t.Errorf("%d batches held a message delivered again beside others", mixed)
	}
}

// trickleUntilPoisonDead publishes other messages, one a request, until a
// dead letter comes (a push that succeeds after a failure tells the
// failure was its messages' own: else the endpoint could be down, and
// nothing is nak'ed); the consumer drained, it fails the test unless that
// is the only dead letter, the poison's. It returns how many batches held
// a message delivered again beside others.
func trickleUntilPoisonDead(t *testing.T, e *env, rc *receiver, poison uint64) (mixed int) {
	t.Helper()
	for i := 0; len(e.deadLetters()) == 0; i++ {
		if i == 200 {
			t.Fatal("the poison message was not dead-lettered within 200 requests")
		}
		e.publish("orders.new", fmt.Sprint("c", i), nil)
		els := elements(t, rc.next(t, 10*time.Second))
		for _, el := range els {
			if el.Metadata.NumDelivered != "1" && len(els) > 1 {
				mixed++
				t.Logf("a batch of %d holds %s (%s), delivered %s", len(els), el.ID, el.Data, el.Metadata.NumDelivered)
			}
		}
	}
	e.drained(10 * time.Second)
	dl := e.deadLetters()
	if len(dl) != 1 || dl[0].Header.Get("Jetgate-Dead-Seq") != fmt.Sprint(poison) {
		for _, m := range dl {
			t.Logf("dead letter: seq %s, %s, %q", m.Header.Get("Jetgate-Dead-Seq"), m.Header.Get("Jetgate-Dead-Reason"), m.Data)
		}
		t.Fatalf("%d dead letters; want 1, the poison's (seq %d)", len(dl), poison)
	}
	return mixed
}

// A busy endpoint's failures (503 to every other request: one bad instance
// behind a balancer) split no batch: the failure is the endpoint's, no
// message's, and batches of one would multiply the requests to an endpoint
// in trouble. (A first form marked every message of a batch whose failure
// was judged its own: 74–112 requests, against 26–28; a reviewer's test.)
func TestABusyEndpointsFailuresSplitNoBatch(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	rc.answerWith(func(n int, _ pushed, w http.ResponseWriter) {
		if n%2 == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	const n = 100
	for i := range n {
		e.publish("orders.new", fmt.Sprint(i), nil)
	}
	pc := batched(rc.URL, push.Batch{MaxMessages: 10, MaxWait: 200 * time.Millisecond})
	pc.Concurrency = 2
	pc.RetryMin, pc.RetryMax = 100*time.Millisecond, 200*time.Millisecond
	e.replica(consumerCfg(func(c *consumer.Config) { c.MaxDeliver = 20; c.AckWait = 5 * time.Second }), pc)
	e.drained(60 * time.Second)
	rc.mu.Lock()
	requests := rc.n
	rc.mu.Unlock()
	if requests > 40 {
		t.Errorf("%d requests for %d messages in batches of 10, every other one failing 503; want 40 at most", requests, n)
	}
}
