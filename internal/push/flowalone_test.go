package push

import (
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/pull"
)

// delivery is a job of stream sequence seq, in its delivery n, whose last
// failure was a 500.
func delivery(seq, n uint64) *job {
	return &job{d: &consumer.Delivery{Meta: pull.Metadata{StreamSeq: seq, Delivered: n}}, size: 10, faulted: true}
}

// A message whose failure, a 500, was its own goes alone when the server
// delivers it again, and the batch before it stops short of it; one
// delivered no later than the failure (from before a reset) is batched as
// any, and the mark is used once. A failure that was no 500 (a busy or
// absent endpoint's) marks nothing.
func TestAMessageThatFailedOnItsOwnGoesAloneNextTime(t *testing.T) {
	f := newFlow(time.Millisecond, time.Second)
	f.batching = true
	busy := delivery(3, 1)
	busy.faulted = false
	f.markAlone([]*job{delivery(2, 1), delivery(5, 3), busy})
	f.add(delivery(1, 1), delivery(2, 2), delivery(3, 1), delivery(5, 2))
	for i, want := range []int{1, 1, 2} {
		if b := f.nextBatch(10, 1<<20, 0); len(b) != want {
			t.Fatalf("batch %d holds %d, want %d", i, len(b), want)
		}
	}
	f.add(delivery(2, 3), delivery(6, 1))
	if b := f.nextBatch(10, 1<<20, 0); len(b) != 2 {
		t.Fatalf("a batch of %d: the mark held for a second delivery", len(b))
	}
}

// The marks are bounded: past aloneMax they are cleared, and the newest
// kept.
func TestTheAloneMarksAreBounded(t *testing.T) {
	f := newFlow(time.Millisecond, time.Second)
	for seq := range uint64(aloneMax + 10) {
		f.markAlone([]*job{delivery(seq, 1)})
	}
	if n := len(f.alone); n > aloneMax || n == 0 {
		t.Fatalf("%d marks, want 1–%d", n, aloneMax)
	}
	if _, ok := f.alone[aloneMax+9]; !ok {
		t.Fatal("the newest mark was lost")
	}
}

// Jobs that go alone failing retryably otherwise than with a 500 (503,
// refused) one after another, nothing else pushed: an endpoint that is
// down. It is held back, and the first success once it is back judges no
// failure its message's own (a reviewer's test).
func TestAloneJobsFailingInARowHoldTheEndpoint(t *testing.T) {
	f := newFlow(time.Millisecond, time.Second)
	f.batching = true
	f.markAlone([]*job{delivery(1, 1), delivery(2, 1), delivery(3, 1)})
	js := []*job{delivery(1, 2), delivery(2, 2), delivery(3, 2)}
	for _, j := range js {
		j.faulted = false
	}
	f.add(js...)
	for range js {
		b := f.nextBatch(10, 1<<20, 0)
		if len(b) != 1 || !b[0].alone {
			t.Fatalf("a batch of %d, alone %v", len(b), b[0].alone)
		}
		f.failedRetryable(time.Now(), b...) // 503
	}
	for round := range 5 { // the retrier, one at a time
		for range js {
			j, _, ok := f.retryDue()
			if !ok {
				t.Fatalf("round %d: nothing to retry", round)
			}
			if b := f.takeBatch(j, 10); len(b) != 1 {
				t.Fatalf("a retry of %d", len(b))
			}
			f.failedRetryable(time.Now(), j) // 503 again
		}
	}
	if _, held := f.state(); !held {
		t.Errorf("18 requests in a row failed retryably, nothing else pushed, and the endpoint is not held back")
	}
	// Back: the retrier's next try succeeds.
	j, _, _ := f.retryDue()
	f.takeBatch(j, 10)
	if own := f.succeeded(time.Now(), 1); len(own) != 0 {
		t.Errorf("the endpoint's outage judged %d messages' own failures (each nak'ed, a delivery spent)", len(own))
	}
}
