package consumer

import (
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// again is a redelivery with consumer sequence cseq: the stream rule,
// which reads first deliveries, has nothing to say of it.
func again(cseq uint64) delivery { return delivery{cseq: cseq, sseq: 1, delivered: 2} }

// Deliveries to pulls open at once come in any order between the pulls:
// none of that is a reset.
func TestInterleavedPullsAreNoReset(t *testing.T) {
	w := newResetWatch(10, 0, true, func() {})
	a, b := w.mark(), w.mark()
	for _, d := range []struct {
		m    *seqMark
		cseq uint64
	}{{&b, 12}, {&a, 11}, {&a, 13}, {&b, 14}, {&a, 15}} {
		if reset, stale := w.admit(d.m, again(d.cseq), noReset); reset || stale {
			t.Fatalf("cseq %d: reset %v stale %v", d.cseq, reset, stale)
		}
	}
	c := w.mark()
	if c.Floor != 15 {
		t.Fatalf("a pull sent now has floor %d; want 15", c.Floor)
	}
}

// A delivery at or below the pull's floor, or its own last, is after a
// reset. A pull sent before it is stale until it too shows a reset, taken
// within requestLag as the one noticed (its request would be); one sent
// after is not.
func TestARegressedSequenceIsAReset(t *testing.T) {
	w := newResetWatch(0, 0, true, func() {})
	a, b := w.mark(), w.mark()
	w.admit(&a, again(1), noReset)
	w.admit(&b, again(2), noReset)
	c := w.mark() // floor 2
	if reset, _ := w.admit(&c, again(1), noReset); !reset {
		t.Fatal("cseq 1 on a pull with floor 2: no reset")
	}
	if reset, stale := w.admit(&b, again(3), noReset); reset || !stale {
		t.Fatalf("B, sent before the reset, cseq 3: reset %v stale %v; want stale", reset, stale)
	}
	if reset, stale := w.admit(&a, again(1), noReset); reset || stale {
		t.Fatalf("A shows the reset noticed just before: reset %v stale %v; want that one, leased", reset, stale)
	}
	if reset, stale := w.admit(&a, again(2), noReset); reset || stale {
		t.Fatalf("A, past the reset: reset %v stale %v", reset, stale)
	}
	d := w.mark()
	if reset, stale := w.admit(&d, again(3), noReset); reset || stale {
		t.Fatalf("a pull sent after the reset: reset %v stale %v", reset, stale)
	}
	if reset, _ := w.admit(&d, again(3), noReset); !reset {
		t.Fatal("the same sequence twice on one pull: no reset")
	}
}

// An info that counts fewer deliveries than were received before it was
// asked is a reset; one that counts more raises the floor of later pulls;
// one asked across a reset noticed meanwhile says nothing.
func TestAnInfoTellsAResetOrRaisesTheFloor(t *testing.T) {
	w := newResetWatch(0, 0, true, func() {})
	a := w.mark()
	w.admit(&a, again(5), noReset)
	if w.informed(w.mark(), jetstream.SequenceInfo{Consumer: 9, Stream: 9}) {
		t.Fatal("an info counting more: a reset")
	}
	if f := w.mark().Floor; f != 9 {
		t.Fatalf("floor %d after the info; want 9", f)
	}
	before := w.mark()
	if !w.informed(before, jetstream.SequenceInfo{Consumer: 3, Stream: 9}) {
		t.Fatal("an info counting 3 after 9 were seen: no reset")
	}
	if w.informed(before, jetstream.SequenceInfo{Consumer: 1, Stream: 9}) {
		t.Fatal("an info asked before the reset was noticed reported it again")
	}
}

func noReset() bool { return false }

// A reset voids the leases as it starts its epoch; the table's own reset
// (a message held came again) starts one too, and the pull is past it.
func TestAResetVoidsAndTheTablesResetStartsAnEpoch(t *testing.T) {
	voids := 0
	w := newResetWatch(5, 0, true, func() { voids++ })
	a := w.mark()
	if reset, _ := w.admit(&a, again(3), noReset); !reset || voids != 1 {
		t.Fatalf("cseq 3 below floor 5: reset %v, %d voids", reset, voids)
	}
	b := w.mark()
	if reset, stale := w.admit(&b, again(4), func() bool { return true }); !reset || stale || voids != 1 {
		t.Fatalf("the table's reset: reset %v stale %v, %d voids (the table voids itself)", reset, stale, voids)
	}
	if reset, stale := w.admit(&b, again(5), noReset); reset || stale {
		t.Fatalf("the pull after the table's reset: reset %v stale %v", reset, stale)
	}
	if reset, stale := w.admit(&a, again(6), noReset); reset || !stale {
		t.Fatalf("a pull from before the table's reset: reset %v stale %v; want stale", reset, stale)
	}
}

// A first delivery of a message at or below a stream sequence received
// before, on this pull or before it was sent, comes after a reset, however
// its consumer sequence looks; a redelivery does not say, nor does a
// consumer of last_per_subject. An info that counts fewer stream sequences
// delivered than were received is one too.
func TestAFirstDeliveryBelowTheStreamMarkIsAReset(t *testing.T) {
	w := newResetWatch(0, 0, true, func() {})
	a := w.mark()
	for _, d := range []delivery{{1, 10, 1}, {2, 4, 3}, {3, 11, 1}} { // a redelivery of 4 among them
		if reset, stale := w.admit(&a, d, noReset); reset || stale {
			t.Fatalf("%+v: reset %v stale %v", d, reset, stale)
		}
	}
	if reset, _ := w.admit(&a, delivery{cseq: 4, sseq: 11, delivered: 1}, noReset); !reset {
		t.Fatal("stream sequence 11 delivered first twice on one pull: no reset")
	}
	b := w.mark()
	w.admit(&b, delivery{cseq: 5, sseq: 20, delivered: 1}, noReset)
	c := w.mark() // stream floor 20
	if c.StreamFloor != 20 {
		t.Fatalf("stream floor %d, want 20", c.StreamFloor)
	}
	if reset, _ := w.admit(&c, delivery{cseq: 6, sseq: 15, delivered: 2}, noReset); reset {
		t.Fatal("a redelivery below the stream floor: a reset")
	}
	if reset, _ := w.admit(&c, delivery{cseq: 7, sseq: 18, delivered: 1}, noReset); !reset {
		t.Fatal("a first delivery of 18 after 20 was received, its consumer sequence higher: no reset")
	}

	last := newResetWatch(0, 0, false, func() {})
	d := last.mark()
	last.admit(&d, delivery{cseq: 1, sseq: 30, delivered: 1}, noReset)
	if reset, _ := last.admit(&d, delivery{cseq: 2, sseq: 12, delivered: 1}, noReset); reset {
		t.Fatal("last_per_subject's first deliveries out of stream order: a reset")
	}

	e := w.mark()
	w.admit(&e, delivery{cseq: 1, sseq: 40, delivered: 1}, noReset)
	if w.informed(w.mark(), jetstream.SequenceInfo{Consumer: 9, Stream: 50}) {
		t.Fatal("an info counting more: a reset")
	}
	if !w.informed(w.mark(), jetstream.SequenceInfo{Consumer: 20, Stream: 30}) {
		t.Fatal("an info counting stream sequence 30 delivered after 50: no reset")
	}
}

// A reset a delivery showed may have its request pass late: that request
// does not void again (the leases taken since are of deliveries after the
// reset), but a second request is a second reset and voids.
func TestALateRequestVoidsNothingAndASecondOneVoids(t *testing.T) {
	voids := 0
	w := newResetWatch(0, 0, true, func() { voids++ })
	a := w.mark()
	w.admit(&a, again(5), noReset)
	b := w.mark() // floor 5
	if reset, _ := w.admit(&b, again(1), noReset); !reset || voids != 1 {
		t.Fatalf("cseq 1 on a pull with floor 5: reset %v, %d voids", reset, voids)
	}
	if w.noticeRequest("r1") || voids != 1 {
		t.Fatalf("the shown reset's late request voided again (%d voids)", voids)
	}
	if !w.noticeRequest("r2") || voids != 2 {
		t.Fatalf("a second reset's request, within the lag, did not void (%d voids)", voids)
	}
	if w.noticeRequest("r2") || voids != 2 {
		t.Fatalf("the same request twice voided twice (%d voids)", voids)
	}
}

// A pull from before a reset its request voided may show that reset, and
// voids nothing again: the next request that passes is another reset, and
// voids.
func TestARequestAfterAStalePullShowedAResetVoids(t *testing.T) {
	voids := 0
	w := newResetWatch(0, 0, true, func() { voids++ })
	a := w.mark()
	w.admit(&a, again(5), noReset)
	b := w.mark() // floor 5, sent before the reset
	if !w.noticeRequest("r1") || voids != 1 {
		t.Fatalf("the first request: %d voids", voids)
	}
	if reset, _ := w.admit(&b, again(1), noReset); reset || voids != 1 {
		t.Fatalf("the stale pull shows the reset: reset %v, %d voids", reset, voids)
	}
	if !w.noticeRequest("r2") || voids != 2 {
		t.Fatalf("the next reset's request did not void (%d voids)", voids)
	}
}

// A peer's word that names a reset's request may reach a replica before
// the request does (each comes on a subscription of its own). Where a
// delivery here showed that reset already, the word is taken as the
// request: it voids nothing, and neither does the request when it passes.
// A word of a reset the peer saw shown voids, as does a word naming
// another reset's request.
func TestAPeersWordOvertakingTheRequestOfAShownResetVoidsNothing(t *testing.T) {
	voids := 0
	s := &onServer{resets: newResetWatch(0, 0, true, func() { voids++ }), log: slog.New(slog.DiscardHandler)}
	a := s.resets.mark()
	s.resets.admit(&a, again(5), noReset)
	b := s.resets.mark() // floor 5
	if reset, _ := s.resets.admit(&b, again(1), noReset); !reset || voids != 1 {
		t.Fatalf("cseq 1 on a pull with floor 5: reset %v, %d voids", reset, voids)
	}
	s.ResetTold("_INBOX.r1")
	if voids != 1 {
		t.Fatalf("a peer's word of the shown reset's request voided again (%d voids)", voids)
	}
	s.ResetRequested("_INBOX.r1")
	if voids != 1 {
		t.Fatalf("the request after the word voided again (%d voids)", voids)
	}
	s.ResetTold(shownReset + "0123456789abcdef")
	if voids != 2 {
		t.Fatalf("a peer's word of a reset it saw shown voided nothing (%d voids)", voids)
	}
	s.ResetTold("_INBOX.r2")
	if voids != 3 {
		t.Fatalf("a peer's word of another reset's request voided nothing (%d voids)", voids)
	}
}

// A consumer deleted voids every lease (gone); an info of a consumer made
// later under its name voids them once more only where the deletion was
// missed: after gone, the first creation said is taken as is, and an info
// answered out of order (an earlier creation) changes nothing.
func TestADeletedOrRemadeConsumerVoids(t *testing.T) {
	voids := 0
	w := newResetWatch(5, 5, true, func() { voids++ })
	t0 := time.Unix(1000, 0)
	w.created = t0
	if w.remade(t0) || w.remade(time.Time{}) || voids != 0 {
		t.Fatalf("the same creation voided (%d)", voids)
	}
	if !w.remade(t0.Add(time.Second)) || voids != 1 {
		t.Fatalf("a later creation, the deletion missed: %d voids; want 1", voids)
	}
	if w.remade(t0) || voids != 1 {
		t.Fatal("an earlier creation, answered late, voided")
	}
	w.gone()
	if voids != 2 || w.mark().Floor != 0 {
		t.Fatalf("deleted: %d voids, floor %d; want 2, 0", voids, w.mark().Floor)
	}
	if w.remade(t0.Add(2*time.Second)) || voids != 2 {
		t.Fatal("the consumer made again after a deletion heard voided again")
	}
	if !w.remade(t0.Add(3*time.Second)) || voids != 3 {
		t.Fatal("made again once more, unheard: no void")
	}
}

// An info asked before a deletion and answered after its advisory carries
// the deleted consumer's creation: it set the watch back to it, and the
// first info of the consumer made again voided the leases taken of it.
func TestALateInfoOfTheDeletedConsumerDoesNotVoidTheNewOnesLeases(t *testing.T) {
	voids := 0
	w := newResetWatch(5, 5, true, func() { voids++ })
	t0 := time.Unix(1000, 0)
	w.created = t0
	w.gone() // the delete advisory: the old consumer's leases void
	if voids != 1 {
		t.Fatalf("gone: %d voids", voids)
	}
	w.remade(t0) // a late info of the deleted consumer
	// The consumer is made again (t0+2s); this replica leases its
	// deliveries, then an info of it comes.
	if w.remade(t0.Add(2*time.Second)) || voids != 1 {
		t.Fatalf("the first info of the consumer made again voided its leases (%d voids; want 1): a stale info after the deletion re-armed the watch", voids)
	}
}
