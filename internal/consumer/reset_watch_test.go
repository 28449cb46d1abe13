package consumer

import (
	"testing"

	"github.com/jetgate/jetgate/internal/pull"
)

// Deliveries to pulls open at once come in any order between the pulls:
// none of that is a reset.
func TestInterleavedPullsAreNoReset(t *testing.T) {
	w := newResetWatch(10, func() {})
	a, b := w.mark(), w.mark()
	for _, d := range []struct {
		m    *pull.SeqMark
		cseq uint64
	}{{&b, 12}, {&a, 11}, {&a, 13}, {&b, 14}, {&a, 15}} {
		if reset, stale := w.admit(d.m, d.cseq, noReset); reset || stale {
			t.Fatalf("cseq %d: reset %v stale %v", d.cseq, reset, stale)
		}
	}
	c := w.mark()
	if c.Floor != 15 {
		t.Fatalf("a pull sent now has floor %d; want 15", c.Floor)
	}
}

// A delivery at or below the pull's floor, or its own last, is after a
// reset. A pull sent before it is stale until it too shows a reset, which
// counts as a reset again (it may be a later one); one sent after is not.
func TestARegressedSequenceIsAReset(t *testing.T) {
	w := newResetWatch(0, func() {})
	a, b := w.mark(), w.mark()
	w.admit(&a, 1, noReset)
	w.admit(&b, 2, noReset)
	c := w.mark() // floor 2
	if reset, _ := w.admit(&c, 1, noReset); !reset {
		t.Fatal("cseq 1 on a pull with floor 2: no reset")
	}
	if reset, stale := w.admit(&b, 3, noReset); reset || !stale {
		t.Fatalf("B, sent before the reset, cseq 3: reset %v stale %v; want stale", reset, stale)
	}
	if reset, stale := w.admit(&a, 1, noReset); !reset || stale {
		t.Fatalf("A shows a reset, maybe the one noticed already: reset %v stale %v; want a reset, leased", reset, stale)
	}
	if reset, stale := w.admit(&a, 2, noReset); reset || stale {
		t.Fatalf("A, past the reset: reset %v stale %v", reset, stale)
	}
	d := w.mark()
	if reset, stale := w.admit(&d, 3, noReset); reset || stale {
		t.Fatalf("a pull sent after the reset: reset %v stale %v", reset, stale)
	}
	if reset, _ := w.admit(&d, 3, noReset); !reset {
		t.Fatal("the same sequence twice on one pull: no reset")
	}
}

// An info that counts fewer deliveries than were received before it was
// asked is a reset; one that counts more raises the floor of later pulls;
// one asked across a reset noticed meanwhile says nothing.
func TestAnInfoTellsAResetOrRaisesTheFloor(t *testing.T) {
	w := newResetWatch(0, func() {})
	a := w.mark()
	w.admit(&a, 5, noReset)
	if w.informed(w.mark(), 9) {
		t.Fatal("an info counting more: a reset")
	}
	if f := w.mark().Floor; f != 9 {
		t.Fatalf("floor %d after the info; want 9", f)
	}
	before := w.mark()
	if !w.informed(before, 3) {
		t.Fatal("an info counting 3 after 9 were seen: no reset")
	}
	if w.informed(before, 1) {
		t.Fatal("an info asked before the reset was noticed reported it again")
	}
}

func noReset() bool { return false }

// A reset voids the leases as it starts its epoch; the table's own reset
// (a message held came again) starts one too, and the pull is past it.
func TestAResetVoidsAndTheTablesResetStartsAnEpoch(t *testing.T) {
	voids := 0
	w := newResetWatch(5, func() { voids++ })
	a := w.mark()
	if reset, _ := w.admit(&a, 3, noReset); !reset || voids != 1 {
		t.Fatalf("cseq 3 below floor 5: reset %v, %d voids", reset, voids)
	}
	b := w.mark()
	if reset, stale := w.admit(&b, 4, func() bool { return true }); !reset || stale || voids != 1 {
		t.Fatalf("the table's reset: reset %v stale %v, %d voids (the table voids itself)", reset, stale, voids)
	}
	if reset, stale := w.admit(&b, 5, noReset); reset || stale {
		t.Fatalf("the pull after the table's reset: reset %v stale %v", reset, stale)
	}
	if reset, stale := w.admit(&a, 6, noReset); reset || !stale {
		t.Fatalf("a pull from before the table's reset: reset %v stale %v; want stale", reset, stale)
	}
}
