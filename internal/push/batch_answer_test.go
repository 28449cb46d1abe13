package push_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/push"
)

// taker is an endpoint's record of the messages it took: by data, the
// delivery each was taken in.
type taker struct {
	mu    sync.Mutex
	taken map[string]string
}

func (tk *taker) take(els []element) {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	if tk.taken == nil {
		tk.taken = map[string]string{}
	}
	for _, el := range els {
		tk.taken[string(el.Data)] = el.Metadata.NumDelivered
	}
}

func (tk *taker) count() int {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	return len(tk.taken)
}

// firstDeliveries fails unless every message was taken in its first
// delivery.
func (tk *taker) firstDeliveries(t *testing.T) {
	t.Helper()
	tk.mu.Lock()
	defer tk.mu.Unlock()
	for data, n := range tk.taken {
		if n != "1" {
			t.Errorf("%q taken in delivery %s, want 1: a delivery was spent", data, n)
		}
	}
}

// An endpoint whose backend is down and says so per message (a 2xx naming
// every message of each batch failed, as an SQS-style handler that catches
// its errors does) is down as one answering 503: held back, it burns no
// delivery and dead-letters nothing. (Every message nak'ed, it spent one
// delivery a request, and at max_deliver 2 the backlog was dead-lettered.)
func TestA2xxNamingEveryMessageFailedBurnsNoDeliveries(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	var mu sync.Mutex
	failing := 6 // requests answered 200 with every message named failed
	var tk taker
	rc.answerWith(func(_ int, p pushed, w http.ResponseWriter) {
		var els []element
		_ = json.Unmarshal(p.body, &els)
		mu.Lock()
		defer mu.Unlock()
		if failing > 0 {
			failing--
			var fs []string
			for _, el := range els {
				fs = append(fs, fmt.Sprintf(`{"id":%q}`, el.ID))
			}
			fmt.Fprintf(w, `{"failures":[%s]}`, strings.Join(fs, ","))
			return
		}
		tk.take(els)
	})
	pc := batched(rc.URL, push.Batch{MaxMessages: 5, MaxWait: 50 * time.Millisecond})
	pc.RetryMin, pc.RetryMax = 50*time.Millisecond, 200*time.Millisecond
	e.replica(consumerCfg(func(c *consumer.Config) { c.MaxDeliver = 2 }), pc)
	const n = 10
	for i := range n {
		e.publish("orders.new", fmt.Sprint(i), nil)
	}
	natstest.Eventually(t, 10*time.Second, "every message taken", func() bool {
		return tk.count() == n || len(e.deadLetters()) > 0
	})
	if dl := e.deadLetters(); len(dl) != 0 {
		t.Fatalf("%d dead letters; %d of %d messages taken", len(dl), tk.count(), n)
	}
	tk.firstDeliveries(t)
	e.drained(5 * time.Second)
}

// An answer in the shape of SQS's partial batch response itself (Lambda's
// `{"batchItemFailures":[{"itemIdentifier":…}]}`, as a handler ported from
// SQS writes it) names failed messages as `failures` does: it was read as an
// object without failures, and every message acked, the failed one lost.
func TestAnSQSBatchItemFailuresAnswerNaksThoseItNames(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	rc.answerWith(func(n int, p pushed, w http.ResponseWriter) {
		var els []element
		if n == 1 && json.Unmarshal(p.body, &els) == nil && len(els) == 3 {
			fmt.Fprintf(w, `{"batchItemFailures":[{"itemIdentifier":%q}]}`, els[1].ID)
		}
	})
	e.replica(consumerCfg(), batched(rc.URL, push.Batch{MaxMessages: 3, MaxWait: time.Second}))
	for _, d := range []string{"a", "b", "c"} {
		e.publish("orders.new", d, nil)
	}
	if els := elements(t, rc.next(t, 10*time.Second)); len(els) != 3 {
		t.Fatalf("the first batch holds %d, want 3", len(els))
	}
	select {
	case p := <-rc.got:
		if els := elements(t, p); len(els) != 1 || string(els[0].Data) != "b" || els[0].Metadata.NumDelivered != "2" {
			t.Fatalf("pushed again: %+v; want b, delivery 2", els)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the message the answer named failed was not pushed again: acked")
	}
	e.drained(5 * time.Second)
}

// An answer naming a message by an id that is not its element's (its
// Nats-Msg-Id, here, as a receiver keyed by the publisher's ids writes it)
// fails the batch, as SQS's partial batch response does: the batch is
// pushed again whole, in the same delivery, and the endpoint's last error
// says why. It was ignored, with a log line, and every message acked: the
// one the receiver meant lost.
func TestAFailureNamingAnIDNotInTheBatchFailsIt(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	rc.answerWith(func(n int, _ pushed, w http.ResponseWriter) {
		if n == 1 {
			fmt.Fprint(w, `{"failures":[{"id":"order-b"}]}`)
		}
	})
	r, _ := e.replica(consumerCfg(), batched(rc.URL, push.Batch{MaxMessages: 3, MaxWait: time.Second}))
	for _, d := range []string{"a", "b", "c"} {
		e.publish("orders.new", d, nats.Header{"Nats-Msg-Id": {"order-" + d}})
	}
	first := rc.next(t, 10*time.Second)
	select {
	case again := <-rc.got:
		els := elements(t, again)
		if len(els) != 3 || els[1].Metadata.NumDelivered != "1" || again.header.Get("Webhook-Id") != first.header.Get("Webhook-Id") {
			t.Fatalf("pushed again: %q; want the batch whole, in the same delivery", again.body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the batch was not pushed again: acked whole, b lost")
	}
	if st := pushState(t, r); !strings.Contains(st.LastError, "order-b") {
		t.Errorf("last error %q; want it to name order-b", st.LastError)
	}
	e.drained(5 * time.Second)
}
