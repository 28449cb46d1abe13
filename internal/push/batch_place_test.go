package push_test

import (
	"context"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/push"
	"github.com/jetgate/jetgate/internal/replica"
)

// semEnv: concurrency 1, batches of up to 3. Batch A (seq 1) fails 503 once;
// the retrier pushes it again and the handler holds that push (hold). B
// (seq 2) is then published: the worker takes it and waits for the one
// place, which the retrier's A holds. It returns once B waits.
func semEnv(t *testing.T, ackWait time.Duration, hold func(p pushed, w http.ResponseWriter)) (*env, *receiver, *replica.Replica) {
	e := newEnv(t)
	rc := newReceiver(t)
	rc.answerWith(func(n int, p pushed, w http.ResponseWriter) {
		switch {
		case n == 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		case n == 2:
			hold(p, w)
		}
	})
	pc := batched(rc.URL, push.Batch{MaxMessages: 3, MaxWait: 10 * time.Millisecond})
	pc.Concurrency, pc.Timeout = 1, time.Minute
	pc.RetryMin, pc.RetryMax = 50*time.Millisecond, 100*time.Millisecond
	r, _ := e.replica(consumerCfg(func(c *consumer.Config) { c.AckWait = ackWait }), pc)
	e.publish("orders.new", "a", nil)
	rc.next(t, 10*time.Second) // A, 503
	rc.next(t, 10*time.Second) // A again, by the retrier: held
	e.publish("orders.new", "b", nil)
	natstest.Eventually(t, 10*time.Second, "B taken by a worker (two messages in flight)", func() bool {
		st, err := r.Consumer(context.Background(), stream, name)
		return err == nil && st.Push != nil && st.Push.InFlight == 2
	})
	return e, rc, r
}

// inStop reports whether a goroutine is inside (*Pusher).Stop: its stop
// channel is closed by then.
func inStop() bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), "push.(*Pusher).Stop(")
}

// Stop starts no push (its doc, DESIGN 11: on shutdown a replica stops
// pulling, lets requests in flight finish, and naks what stays): a batch
// that waited for a place when Stop came must not be pushed once a place
// frees, but given back.
func TestStopStartsNoPushOfABatchWaitingForAPlace(t *testing.T) {
	release := make(chan struct{})
	_, rc, r := semEnv(t, 30*time.Second, func(p pushed, w http.ResponseWriter) {
		select {
		case <-release:
		case <-p.ctx.Done():
		}
	})
	stopped := make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		r.StopPush(ctx)
		close(stopped)
	}()
	natstest.Eventually(t, 5*time.Second, "Stop entered", inStop)
	close(release) // A answered 204: the place frees
	<-stopped
	select {
	case p := <-rc.got:
		t.Fatalf("a batch pushed after Stop: %s (%d bytes): Stop started a push of a batch that waited for a place", p.header.Get("Webhook-Id"), len(p.body))
	default:
	}
}

// A batch's Webhook-Timestamp (what a receiver checks against its clock,
// 5 minutes' tolerance) is when it goes, not when it began to wait for a
// place: with a timeout over 5 minutes, a batch that waited behind a long
// request is refused by a verifying receiver (401: every message of it
// terminated). Its leases are kept meanwhile (ack_wait 1s, waited ~2.5s).
func TestABatchIsSignedWhenItGoesAndKeepsItsLeasesWhileWaiting(t *testing.T) {
	e, rc, _ := semEnv(t, time.Second, func(p pushed, w http.ResponseWriter) {
		select {
		case <-time.After(2500 * time.Millisecond): // the endpoint's own time on A
		case <-p.ctx.Done():
		}
	})
	p := rc.next(t, 10*time.Second)
	els := elements(t, p)
	if len(els) != 1 || string(els[0].Data) != "b" {
		t.Fatalf("next push %q", p.body)
	}
	if els[0].Metadata.NumDelivered != "1" {
		t.Errorf("B delivered %s times: its lease lapsed while it waited", els[0].Metadata.NumDelivered)
	}
	sec, _ := strconv.ParseInt(p.header.Get("Webhook-Timestamp"), 10, 64)
	if age := p.at.Sub(time.Unix(sec, 0)); age >= 2*time.Second {
		t.Errorf("B's Webhook-Timestamp is %v older than its arrival: signed before it waited for a place", age.Round(time.Millisecond))
	}
	e.drained(10 * time.Second)
}

// A batch waiting for a place when the grace ends (ctx cancelled while it
// waits) is abandoned, and its leases given back at once (nak'ed), as a
// request cut short is: another consumer gets A and B long before ack_wait.
func TestABatchAbandonedWhileWaitingIsGivenBack(t *testing.T) {
	e, _, r := semEnv(t, 30*time.Second, func(p pushed, w http.ResponseWriter) {
		<-p.ctx.Done() // never answers
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	r.StopPush(ctx)
	cancel()
	c, err := e.js.Consumer(context.Background(), stream, name)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	deadline := time.Now().Add(10 * time.Second) // ack_wait is 30s
	for len(got) < 2 && time.Now().Before(deadline) {
		b, err := c.Fetch(2, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range b.Messages() {
			got[string(m.Data())] = true
			_ = m.Ack()
		}
	}
	if !got["a"] || !got["b"] {
		t.Fatalf("got %v back within 10s of a 30s ack_wait: not given back", got)
	}
}
