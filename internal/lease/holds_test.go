package lease

import (
	"testing"
	"time"
)

// Only a live lease holds a later delivery: one past its deadline, not yet
// swept, no longer stands between another replica's token and its issuer.
// (Through the API the window is at most one sweep, 100ms, after the
// deadline, before the server can have redelivered: no caller reaches it
// without timing, so the rule is tested here.)
func TestOnlyALiveLeaseHoldsALaterDelivery(t *testing.T) {
	now := time.Now()
	tb := NewTable(time.Minute)
	tb.Add(Lease{StreamSeq: 1, ConsumerSeq: 1, Delivered: 1, Deadline: now.Add(time.Second), AckSubject: "mine"})
	other := Ref{StreamSeq: 1, Delivered: 2, ConsumerSeq: 2, Deadline: now.Add(time.Minute)}
	if !tb.HoldsLater(other, now) {
		t.Fatal("a live delivery counted less often than the token's: not held as later")
	}
	if tb.HoldsLater(other, now.Add(time.Second)) {
		t.Error("at its deadline, the lease still holds the later delivery")
	}
}
