package push_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/push"
)

// A message that fails in every batch is dead-lettered after max_deliver,
// like one pushed alone, while other messages' pushes succeed beside it (in
// a batch of its own, all named failed, it is the endpoint's failure until
// one does); the messages batched with it are acked.
func TestAMessageFailingInEveryBatchIsDeadLettered(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	rc.answerWith(func(_ int, p pushed, w http.ResponseWriter) {
		var els []element
		_ = json.Unmarshal(p.body, &els)
		for _, el := range els {
			if string(el.Data) == "poison" {
				fmt.Fprintf(w, `{"failures":[{"id":%q,"retry_after":"10ms"}]}`, el.ID)
			}
		}
	})
	pc := batched(rc.URL, push.Batch{MaxMessages: 10, MaxWait: 100 * time.Millisecond})
	e.replica(consumerCfg(), pc)
	e.publish("orders.new", "a", nil)
	seq := e.publish("orders.new", "poison", nil)
	e.publish("orders.new", "b", nil)
	var dl []*jetstream.RawStreamMsg
	natstest.Eventually(t, 10*time.Second, "the poison dead-lettered", func() bool {
		select {
		case <-rc.got: // traffic beside the poison
			e.publish("orders.new", "c", nil)
		default:
		}
		dl = e.deadLetters()
		return len(dl) > 0
	})
	if got := dl[0].Header.Get("Jetgate-Dead-Reason") + " " + dl[0].Header.Get("Jetgate-Dead-Seq"); got != fmt.Sprintf("MAX_DELIVERIES %d", seq) {
		t.Fatalf("dead letter %q; want the poison's, out of deliveries", got)
	}
	e.drained(5 * time.Second)
	if dl := e.deadLetters(); len(dl) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dl))
	}
}

// The leases of a batch whose request runs longer than ack_wait are
// extended: nothing is delivered again meanwhile.
func TestABatchSlowerThanAckWaitKeepsItsLeases(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	rc.answerWith(func(n int, p pushed, w http.ResponseWriter) {
		if n == 1 {
			select { // the slow handler itself
			case <-time.After(2500 * time.Millisecond):
			case <-p.ctx.Done():
			}
		}
	})
	pc := batched(rc.URL, push.Batch{MaxMessages: 3, MaxWait: 10 * time.Second})
	pc.Timeout = 10 * time.Second
	e.replica(consumerCfg(), pc) // ack_wait 1s
	for i := range 3 {
		e.publish("orders.new", fmt.Sprint(i), nil)
	}
	if els := elements(t, rc.next(t, 10*time.Second)); len(els) != 3 {
		t.Fatalf("%d messages, want 3", len(els))
	}
	e.drained(10 * time.Second)
	if ci := e.info(); ci.NumRedelivered != 0 {
		t.Fatalf("%d redelivered while the batch ran", ci.NumRedelivered)
	}
	rc.none(t, 300*time.Millisecond)
}

// Batched, an endpoint that refuses connections still costs no delivery:
// held back, the messages keep their leases, and once it listens again
// every message arrives as its first delivery.
func TestAnOutageBurnsNoDeliveriesInBatches(t *testing.T) {
	e := newEnv(t)
	addr := freeAddr(t)
	pc := batched("http://"+addr+"/hook", push.Batch{MaxMessages: 10, MaxWait: 50 * time.Millisecond})
	pc.Concurrency, pc.RetryMin, pc.RetryMax = 4, 50*time.Millisecond, 200*time.Millisecond
	r, _ := e.replica(consumerCfg(), pc) // ack_wait 1s
	const n = 200
	for i := range n {
		e.publish("orders.new", fmt.Sprint(i), nil)
	}
	natstest.Eventually(t, 5*time.Second, "held back", func() bool { return !pushState(t, r).EndpointUp })
	outage := time.NewTimer(2500 * time.Millisecond) // past two ack_waits
	<-outage.C
	if dl := e.deadLetters(); len(dl) != 0 {
		t.Fatalf("%d dead letters during the outage", len(dl))
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the endpoint's port was taken meanwhile: %v", err)
	}
	rc := newReceiver(t)
	srv := &http.Server{Handler: rc.Config.Handler, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	seen := map[string]bool{}
	for len(seen) < n {
		for _, el := range elements(t, rc.next(t, 10*time.Second)) {
			seen[el.ID] = true
			if el.Metadata.NumDelivered != "1" {
				t.Fatalf("%s arrived as delivery %s: the outage cost deliveries", el.ID, el.Metadata.NumDelivered)
			}
		}
	}
	e.drained(10 * time.Second)
	if ci := e.info(); ci.NumRedelivered != 0 {
		t.Fatalf("%d redelivered", ci.NumRedelivered)
	}
}

// A 2xx to a batch whose body is a large object naming no failures (a result
// for each message, over the 1 MiB read for failures) acks the batch: it
// failed the whole batch, which was pushed again for ever, held back.
func TestALargeAnswerWithoutFailuresAcksTheBatch(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	big := `{"ok":true,"results":"` + strings.Repeat("x", 1<<20+10) + `"}`
	rc.answerWith(func(_ int, _ pushed, w http.ResponseWriter) { _, _ = w.Write([]byte(big)) })
	e.replica(consumerCfg(), batched(rc.URL, push.Batch{MaxMessages: 3, MaxWait: 10 * time.Second}))
	for i := range 3 {
		e.publish("orders.new", fmt.Sprint(i), nil)
	}
	if got := elements(t, rc.next(t, 10*time.Second)); len(got) != 3 {
		t.Fatalf("a batch of %d, want 3", len(got))
	}
	rc.none(t, 2*time.Second)
	e.drained(2 * time.Second)
}
