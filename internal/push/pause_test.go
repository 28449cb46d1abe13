package push_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/push"
)

// A consumer paused while its endpoint is down pushes nothing (DESIGN 11),
// retries included: the pusher went on trying the messages it held, one at
// a time, for as long as the pause lasted. Resumed, it pushes them, each on
// the delivery it held.
func TestAPausedConsumerHeldBackPushesNothingTillResumed(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	var up atomic.Bool
	rc.answerWith(func(_ int, _ pushed, w http.ResponseWriter) {
		if !up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	r, _ := e.replica(consumerCfg(func(c *consumer.Config) { c.AckWait = 10 * time.Second }),
		push.Config{URL: rc.URL, Concurrency: 2, RetryMin: 100 * time.Millisecond, RetryMax: 300 * time.Millisecond})
	for i := range 5 {
		e.publish("orders.new", fmt.Sprint(i), nil)
	}
	for range 4 { // failed, and held back: one at a time from now
		rc.next(t, 5*time.Second)
	}
	if _, err := e.js.PauseConsumer(context.Background(), stream, name, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// The replica hears of the pause with the server's answer, about; a
	// request already in flight may still arrive.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if st, err := r.Consumer(context.Background(), stream, name); err == nil && st.Info != nil && st.Info.Paused {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the replica never heard of the pause")
		}
		select {
		case <-rc.got:
		case <-time.After(50 * time.Millisecond):
		}
	}
	select {
	case <-rc.got:
	case <-time.After(500 * time.Millisecond):
	}
	rc.none(t, 2*time.Second)
	up.Store(true)
	if _, err := e.js.ResumeConsumer(context.Background(), stream, name); err != nil {
		t.Fatal(err)
	}
	e.drained(10 * time.Second)
	if n := e.info().NumRedelivered; n != 0 {
		t.Fatalf("%d messages delivered again: the pause cost deliveries", n)
	}
}
