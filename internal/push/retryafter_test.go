package push_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/push"
)

// An endpoint that answers every push 429 or 503 with a Retry-After of 0,
// or of a date in the past, is down like any other: its message keeps its
// delivery (max_deliver 4 is never reached, nothing is dead-lettered), and
// each try waits retry.min at least: no hot loop.
func TestARetryAfterOfZeroOrThePastBurnsNoDelivery(t *testing.T) {
	for name, ra := range map[string]string{"zero": "0", "past": "Wed, 21 Oct 2015 07:28:00 GMT"} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			rc := newReceiver(t)
			const failing = 6
			rc.answerWith(func(n int, _ pushed, w http.ResponseWriter) {
				if n <= failing {
					w.Header().Set("Retry-After", ra)
					w.WriteHeader(map[bool]int{true: http.StatusServiceUnavailable, false: http.StatusTooManyRequests}[n%2 == 0])
				}
			})
			const retryMin = 150 * time.Millisecond
			e.replica(consumerCfg(), push.Config{URL: rc.URL, RetryMin: retryMin, RetryMax: 300 * time.Millisecond})
			e.publish("orders.new", "x", nil)
			var last time.Time
			for i := 0; i <= failing; i++ {
				p := rc.next(t, 5*time.Second)
				if d := p.header.Get("Jetgate-Delivered"); d != "1" {
					t.Fatalf("push %d is delivery %s: a Retry-After of %q burned a delivery", i+1, d, ra)
				}
				if gap := p.at.Sub(last); i > 0 && gap < retryMin-10*time.Millisecond {
					t.Fatalf("push %d came %v after the last, under retry.min %v", i+1, gap, retryMin)
				}
				last = p.at
			}
			e.drained(5 * time.Second)
			if n := len(e.deadLetters()); n != 0 {
				t.Fatalf("%d dead letters", n)
			}
		})
	}
}
