package push_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

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
	// Other messages keep coming, one a request: a push that succeeds
	// after a failure tells the failure was its messages' own (else the
	// endpoint could be down, and nothing is nak'ed).
	mixed := 0 // batches that held a message delivered again beside another
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
	if mixed > 0 {
		t.Errorf("%d batches held a message delivered again beside others", mixed)
	}
}
