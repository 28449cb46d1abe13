package consumer

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// A replica notices a reset when its request passes on NATS, which may be
// before the server applied it: an info it asks then may count the
// deliveries made before the reset (105), and marks the pulls it sends
// next above the reset's replay, numbered from 1. The replay reaching such
// a pull is that reset's, leased: taken for a second reset, it would void
// the replay leased here and, by the word, on every peer.
func TestAnInfoAnsweredBeforeTheServerAppliedAResetShowsNoSecond(t *testing.T) {
	voids := 0
	w := newResetWatch(0, 0, true, func() { voids++ })
	a := w.mark()
	w.admit(&a, again(100), noReset)
	if !w.noticeRequest("r1") || voids != 1 {
		t.Fatalf("the request: %d voids, want 1", voids)
	}
	if w.informed(w.mark(), jetstream.SequenceInfo{Consumer: 105, Stream: 105}) {
		t.Fatal("an info counting what was delivered before the reset shows a reset")
	}
	b := w.mark() // a pull sent after that info, waiting for the replay
	first := delivery{cseq: 1, sseq: 1, delivered: 1}
	if reset, stale := w.admit(&b, first, noReset); reset || stale || voids != 1 {
		t.Fatalf("the replay to the pull: reset %v stale %v, %d voids; want leased, 1 void", reset, stale, voids)
	}
	// The replay showed the reset applied: that info's count marks no
	// more, a later one's does.
	if c := w.mark(); c.Floor != 1 || c.StreamFloor != 1 {
		t.Fatalf("after the replay, marked at %d/%d; want 1/1, its own", c.Floor, c.StreamFloor)
	}
	w.informed(w.mark(), jetstream.SequenceInfo{Consumer: 50, Stream: 50})
	if c := w.mark(); c.Floor != 50 {
		t.Fatalf("after the replay, an info marks at %d; want 50", c.Floor)
	}
}

// Such an info still marks the pulls sent next: a later reset's replay
// shows there, and is leased as that one's.
func TestAnInfoAnsweredBeforeTheServerAppliedAResetMarksForTheNext(t *testing.T) {
	voids := 0
	w := newResetWatch(0, 0, true, func() { voids++ })
	w.noticeRequest("r1") // a skip: nothing delivered before or since
	w.informed(w.mark(), jetstream.SequenceInfo{Consumer: 0, Stream: 3})
	b := w.mark()
	w.noticeRequest("r2") // to the start: the replay comes from 1
	if reset, stale := w.admit(&b, delivery{cseq: 1, sseq: 1, delivered: 1}, noReset); reset || stale || voids != 2 {
		t.Fatalf("the second reset's replay: reset %v stale %v, %d voids; want leased, 2 voids", reset, stale, voids)
	}
}

// An info counting fewer deliveries than were known before the reset's
// request passed is from after the server applied it: it marks surely.
func TestAnInfoCountingLessThanBeforeARequestShowsItApplied(t *testing.T) {
	voids := 0
	w := newResetWatch(0, 0, false, func() { voids++ })
	a := w.mark()
	w.admit(&a, again(100), noReset)
	w.noticeRequest("r1")
	w.informed(w.mark(), jetstream.SequenceInfo{Consumer: 7, Stream: 7})
	b := w.mark()
	if b.Floor != 7 {
		t.Fatalf("the info marks at %d; want 7", b.Floor)
	}
	if reset, _ := w.admit(&b, again(3), noReset); !reset || voids != 2 {
		t.Fatalf("a delivery below it: reset %v, %d voids; want a reset", reset, voids)
	}
}
