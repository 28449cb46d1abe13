package push_test

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/push"
)

// Two replicas push one consumer: each message arrives once, with its
// data, every value of each header, the metadata headers and a Webhook-Id.
func TestEveryMessageArrivesOnceThroughTwoReplicas(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	pc := push.Config{URL: rc.URL, Concurrency: 4}
	e.replica(consumerCfg(), pc)
	e.replica(consumerCfg(), pc)
	const n = 200
	for i := range n {
		e.publish("orders.new", fmt.Sprint(i), nats.Header{"X-Tag": {"a", "b"}, "Content-Type": {"text/plain"}})
	}
	seen := map[string]bool{}
	for range n {
		p := rc.next(t, 10*time.Second)
		id := p.header.Get("Webhook-Id")
		if seen[id] {
			t.Fatalf("%s pushed twice", id)
		}
		seen[id] = true
		seq := seqHeader(p)
		if want := fmt.Sprint(seq - 1); string(p.body) != want || id != stream+"."+strconv.FormatUint(seq, 10) {
			t.Fatalf("push %s: body %q, seq %d", id, p.body, seq)
		}
		if got := p.header.Values("X-Tag"); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("X-Tag %v", got)
		}
		for k, want := range map[string]string{
			"Content-Type": "text/plain", "Jetgate-Stream": stream, "Jetgate-Consumer": name,
			"Jetgate-Subject": "orders.new", "Jetgate-Delivered": "1",
		} {
			if got := p.header.Get(k); got != want {
				t.Fatalf("%s: %q, want %q", k, got, want)
			}
		}
		if _, err := time.Parse(time.RFC3339Nano, p.header.Get("Jetgate-Published")); err != nil {
			t.Fatalf("Jetgate-Published %q: %v", p.header.Get("Jetgate-Published"), err)
		}
		if p.header.Get("Webhook-Timestamp") == "" || p.header.Get("Webhook-Signature") != "" {
			t.Fatalf("Webhook headers without a secret: %v", p.header)
		}
	}
	e.drained(10 * time.Second)
	rc.none(t, 300*time.Millisecond)
}

// 503, then 200: pushed twice, the same delivery (nothing nak'ed: the
// endpoint failed alone), and acked.
func TestA503ThenA200IsPushedTwiceAndAcked(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	rc.answerWith(func(n int, _ pushed, w http.ResponseWriter) {
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	e.replica(consumerCfg(), push.Config{URL: rc.URL, RetryMin: 100 * time.Millisecond, RetryMax: time.Second})
	e.publish("orders.new", "x", nil)
	first, second := rc.next(t, 5*time.Second), rc.next(t, 5*time.Second)
	if first.header.Get("Webhook-Id") != second.header.Get("Webhook-Id") {
		t.Fatalf("Webhook-Id changed: %q, %q", first.header.Get("Webhook-Id"), second.header.Get("Webhook-Id"))
	}
	e.drained(5 * time.Second)
	rc.none(t, 300*time.Millisecond)
}

// 429 with Retry-After: 2 for one message while others succeed: pushed
// again no sooner than 2s after (nak'ed with that delay if the success
// started after its failure, else retried after it).
func TestRetryAfterIsHonoured(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	rc.answerWith(func(n int, _ pushed, w http.ResponseWriter) {
		if n == 1 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	})
	e.replica(consumerCfg(func(c *consumer.Config) { c.AckWait = 10 * time.Second }), push.Config{URL: rc.URL, RetryMin: 100 * time.Millisecond})
	e.publish("orders.new", "x", nil)
	first := rc.next(t, 5*time.Second)
	e.publish("orders.new", "y", nil) // a success after the failure: the failure was x's own
	var second pushed
	for second.body == nil || string(second.body) != "x" {
		second = rc.next(t, 10*time.Second)
	}
	if gap := second.at.Sub(first.at); gap < 2*time.Second {
		t.Fatalf("pushed again after %v, before Retry-After's 2s", gap)
	}
	e.drained(5 * time.Second)
}

// 422 is final: pushed once, terminated with "HTTP 422", dead-lettered.
func TestA422IsPushedOnceAndDeadLettered(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	rc.answerWith(func(_ int, _ pushed, w http.ResponseWriter) { w.WriteHeader(http.StatusUnprocessableEntity) })
	e.replica(consumerCfg(), push.Config{URL: rc.URL})
	seq := e.publish("orders.new", "bad", nil)
	rc.next(t, 5*time.Second)
	var dl []string
	for _, m := range e.waitDeadLetters(1) {
		dl = append(dl, m.Header.Get("Jetgate-Dead-Reason")+" "+m.Header.Get("Jetgate-Dead-Term-Reason")+" "+m.Header.Get("Jetgate-Dead-Seq"))
	}
	if want := "TERM HTTP 422 " + fmt.Sprint(seq); len(dl) != 1 || dl[0] != want {
		t.Fatalf("dead letters %q, want [%q]", dl, want)
	}
	rc.none(t, 1500*time.Millisecond) // past ack_wait: not pushed again
}

func (e *env) waitDeadLetters(n int) []*jetstream.RawStreamMsg {
	e.t.Helper()
	var got []*jetstream.RawStreamMsg
	natstest.Eventually(e.t, 10*time.Second, "dead letters", func() bool {
		got = e.deadLetters()
		return len(got) >= n
	})
	return got
}

// A request that times out is retried; with another message answered
// meanwhile, the failure is its own and it is nak'ed: pushed again as its
// next delivery.
func TestATimeoutNaksWhenOthersSucceed(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	cut := make(chan struct{}, 10)
	rc.answerWith(func(_ int, p pushed, w http.ResponseWriter) {
		if string(p.body) == "slow" && p.header.Get("Jetgate-Delivered") == "1" {
			<-p.ctx.Done() // jetgate's timeout
			cut <- struct{}{}
		}
	})
	e.replica(consumerCfg(func(c *consumer.Config) { c.AckWait = 5 * time.Second }),
		push.Config{URL: rc.URL, Timeout: 300 * time.Millisecond, RetryMin: time.Second, RetryMax: 2 * time.Second, Concurrency: 2})
	e.publish("orders.new", "slow", nil)
	rc.next(t, 5*time.Second) // the slow one
	select {
	case <-cut:
	case <-time.After(5 * time.Second):
		t.Fatal("the slow push was not cut at its timeout")
	}
	e.publish("orders.new", "fast", nil) // pushed after the failure: it tells
	for {
		p := rc.next(t, 5*time.Second)
		if string(p.body) != "slow" {
			continue
		}
		if p.header.Get("Jetgate-Delivered") == "2" {
			break // nak'ed, and delivered again
		}
		// Retried in place before fast's answer was in: again.
		<-cut
		e.publish("orders.new", "fast", nil)
	}
	e.drained(5 * time.Second)
}

// A redirect is not followed: the message is not delivered to where it
// points, and it is not acked.
func TestARedirectIsNotFollowed(t *testing.T) {
	e := newEnv(t)
	elsewhere := newReceiver(t)
	rc := newReceiver(t)
	rc.answerWith(func(_ int, _ pushed, w http.ResponseWriter) {
		w.Header().Set("Location", elsewhere.URL)
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	_, stop := e.replica(consumerCfg(), push.Config{URL: rc.URL, RetryMin: 100 * time.Millisecond, RetryMax: 200 * time.Millisecond})
	e.publish("orders.new", "x", nil)
	rc.next(t, 5*time.Second)
	rc.next(t, 5*time.Second) // tried again: a redirect is a failure
	elsewhere.none(t, 500*time.Millisecond)
	if ci := e.info(); ci.AckFloor.Stream != 0 {
		t.Fatalf("acked after a redirect: ack floor %d", ci.AckFloor.Stream)
	}
	stop()
}

// A handler slower than ack_wait, within the push timeout, keeps its lease:
// not pushed again meanwhile, and acked once it answers.
func TestASlowHandlerWithinTheTimeoutIsNotRedelivered(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	rc.answerWith(func(_ int, _ pushed, w http.ResponseWriter) { time.Sleep(4500 * time.Millisecond) }) // the slow handler itself
	slow := func(c *consumer.Config) { c.AckWait = 2 * time.Second }
	e.replica(consumerCfg(slow), push.Config{URL: rc.URL, Timeout: 10 * time.Second})
	e.replica(consumerCfg(slow), push.Config{URL: rc.URL, Timeout: 10 * time.Second})
	e.publish("orders.new", "x", nil)
	p := rc.next(t, 5*time.Second)
	if p.header.Get("Jetgate-Delivered") != "1" {
		t.Fatalf("delivery %s", p.header.Get("Jetgate-Delivered"))
	}
	e.drained(10 * time.Second)
	if ci := e.info(); ci.NumRedelivered != 0 {
		t.Fatalf("redelivered %d while the handler worked", ci.NumRedelivered)
	}
	rc.none(t, 300*time.Millisecond)
}
