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
