package consumer

import (
	"testing"

	"github.com/jetgate/jetgate/internal/pull"
)

// Deliveries to pulls open at once come in any order between the pulls:
// none of that is a reset.
func TestInterleavedPullsAreNoReset(t *testing.T) {
	w := newResetWatch(10)
	a, b := w.mark(), w.mark()
	for _, d := range []struct {
		m    *pull.SeqMark
		cseq uint64
	}{{&b, 12}, {&a, 11}, {&a, 13}, {&b, 14}, {&a, 15}} {
		if reset, stale := w.saw(d.m, d.cseq); reset || stale {
			t.Fatalf("cseq %d: reset %v stale %v", d.cseq, reset, stale)
		}
	}
	c := w.mark()
	if c.Floor != 15 {
		t.Fatalf("a pull sent now has floor %d; want 15", c.Floor)
	}
}

// A delivery at or below the pull's floor, or its own last, is after a
// reset; reported once. A pull sent before it is stale until it too shows
// the reset; one sent after is not.
func TestARegressedSequenceIsAResetReportedOnce(t *testing.T) {
	w := newResetWatch(0)
	a, b := w.mark(), w.mark()
	w.saw(&a, 1)
	w.saw(&b, 2)
	c := w.mark() // floor 2
	if reset, _ := w.saw(&c, 1); !reset {
		t.Fatal("cseq 1 on a pull with floor 2: no reset")
	}
	if reset, stale := w.saw(&b, 3); reset || !stale {
		t.Fatalf("B, sent before the reset, cseq 3: reset %v stale %v; want stale", reset, stale)
	}
	if reset, stale := w.saw(&a, 1); reset || stale {
		t.Fatalf("A shows the reset noticed already: reset %v stale %v; want neither", reset, stale)
	}
	if reset, stale := w.saw(&a, 2); reset || stale {
		t.Fatalf("A, past the reset: reset %v stale %v", reset, stale)
	}
	d := w.mark()
	if reset, stale := w.saw(&d, 3); reset || stale {
		t.Fatalf("a pull sent after the reset: reset %v stale %v", reset, stale)
	}
	if reset, _ := w.saw(&d, 3); !reset {
		t.Fatal("the same sequence twice on one pull: no reset")
	}
}

// An info that counts fewer deliveries than were received before it was
// asked is a reset; one that counts more raises the floor of later pulls;
// one asked across a reset noticed meanwhile says nothing.
func TestAnInfoTellsAResetOrRaisesTheFloor(t *testing.T) {
	w := newResetWatch(0)
	a := w.mark()
	w.saw(&a, 5)
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
