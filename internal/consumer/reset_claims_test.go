package consumer

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/nats-io/nats.go/jetstream"
)

// A delivery at a pull's floor (the highest consumer sequence received
// before the pull was sent) comes after a reset: the server numbers every
// delivery to a later pull above it. On last_per_subject, where the stream
// rule says nothing, the consumer sequence alone must tell.
func TestADeliveryAtTheFloorIsAReset(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cseq  uint64
		reset bool
	}{
		{"below the floor", 4, true},
		{"at the floor", 5, true},
		{"above the floor", 6, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newResetWatch(0, 0, false, func() {})
			a := w.mark()
			w.admit(&a, delivery{cseq: 5, sseq: 5, delivered: 1}, noReset)
			b := w.mark() // floor 5
			if b.Floor != 5 {
				t.Fatalf("floor %d, want 5", b.Floor)
			}
			d := delivery{cseq: tc.cseq, sseq: 9, delivered: 1} // above every stream sequence seen
			if reset, _ := w.admit(&b, d, noReset); reset != tc.reset {
				t.Fatalf("cseq %d on a pull with floor 5: reset %v, want %v", tc.cseq, reset, tc.reset)
			}
		})
	}
}

// On last_per_subject an info says nothing by the stream sequences it
// counts delivered (the stream rule does not hold there); by the consumer
// sequences it still does.
func TestAnInfoOfLastPerSubjectSaysNothingByStreamSequence(t *testing.T) {
	voids := 0
	w := newResetWatch(0, 0, false, func() { voids++ })
	a := w.mark()
	w.admit(&a, delivery{cseq: 1, sseq: 30, delivered: 1}, noReset)
	if w.informed(w.mark(), jetstream.SequenceInfo{Consumer: 2, Stream: 12}) || voids != 0 {
		t.Fatalf("last_per_subject: an info counting stream sequence 12 after 30 was received voided (%d voids)", voids)
	}
	if !w.informed(w.mark(), jetstream.SequenceInfo{Consumer: 1, Stream: 40}) || voids != 1 {
		t.Fatalf("last_per_subject: an info counting 1 delivery after 2: %d voids, want a reset", voids)
	}
}

// A reset a delivery showed, then voided again by a peer's word of a reset,
// leaves no request to wait for: the next request that passes is a reset of
// its own and voids, however soon it comes.
func TestARequestAfterAPeersWordVoids(t *testing.T) {
	voids := 0
	w := newResetWatch(0, 0, true, func() { voids++ })
	a := w.mark()
	w.admit(&a, again(5), noReset)
	b := w.mark() // floor 5
	if reset, _ := w.admit(&b, again(1), noReset); !reset || voids != 1 {
		t.Fatalf("cseq 1 on a pull with floor 5: reset %v, %d voids", reset, voids)
	}
	if !w.noticeID("word") || voids != 2 {
		t.Fatalf("a peer's word of another reset: %d voids, want 2", voids)
	}
	if !w.noticeRequest("r2") || voids != 3 {
		t.Fatalf("a request after the word's void was taken for a late one (%d voids, want 3)", voids)
	}
}

// The late request of a reset a delivery showed is remembered: a peer that
// saw the same request pass and tells of it (by the request's id) voids
// nothing more here.
func TestALateRequestIsRememberedForThePeersWord(t *testing.T) {
	voids := 0
	w := newResetWatch(0, 0, true, func() { voids++ })
	a := w.mark()
	w.admit(&a, again(5), noReset)
	b := w.mark()
	if reset, _ := w.admit(&b, again(1), noReset); !reset || voids != 1 {
		t.Fatalf("cseq 1 on a pull with floor 5: reset %v, %d voids", reset, voids)
	}
	if w.noticeRequest("r1") || voids != 1 {
		t.Fatalf("the shown reset's late request voided again (%d voids)", voids)
	}
	if w.noticeID("r1") || voids != 1 {
		t.Fatalf("a peer's word of that same request voided again (%d voids)", voids)
	}
}

// A reset the lease table found (a message held came again with its count
// restarted) may have its request pass late: that request voids nothing
// more, as for a reset the consumer sequences showed.
func TestALateRequestOfTheTablesResetVoidsNothing(t *testing.T) {
	voids := 0
	w := newResetWatch(0, 0, false, func() { voids++ })
	a := w.mark()
	w.admit(&a, delivery{cseq: 1, sseq: 7, delivered: 1}, noReset)
	b := w.mark()
	if reset, stale := w.admit(&b, delivery{cseq: 2, sseq: 7, delivered: 1}, func() bool { return true }); !reset || stale {
		t.Fatalf("the table's reset: reset %v stale %v", reset, stale)
	}
	if w.noticeRequest("r1") || voids != 0 {
		t.Fatalf("the table's reset's late request voided the leases taken since (%d voids)", voids)
	}
	if !w.noticeRequest("r2") || voids != 1 {
		t.Fatalf("a second request: %d voids, want 1", voids)
	}
}

// Overlapping holds: deliveries wait until every hold is released, the
// last one taken included, whichever is released first.
func TestAHoldLastsUntilEveryHoldIsReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHoldBack()
		first := h.hold()
		done := make(chan error, 1)
		go func() { done <- h.wait(context.Background()) }()
		synctest.Wait() // the waiter waits on the first hold
		second := h.hold()
		first()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("wait returned (%v) with the second hold standing", err)
		default:
		}
		second()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
