package consumer

import "testing"

// The server hands a reset's replay to every pull waiting through it, in
// turn. On a pull from just before the reset noticed last, the delivery
// that shows a reset is taken, within requestLag, as that one's: voiding
// again would void the replay leased on the other pulls. Past the lag, or
// on a pull from before two resets, it may be a later one, and voids.
func TestAReplayShownToPullsWaitingThroughTheResetVoidsOnce(t *testing.T) {
	voids := 0
	w := newResetWatch(0, 0, true, func() { voids++ })
	a := w.mark()
	w.admit(&a, again(100), noReset)
	b, c, d := w.mark(), w.mark(), w.mark() // floor 100, waiting through the reset
	if !w.noticeRequest("r1") || voids != 1 {
		t.Fatalf("the request: %d voids", voids)
	}
	for i, m := range []*seqMark{&b, &c} {
		if reset, stale := w.admit(m, again(uint64(i+1)), noReset); reset || stale || voids != 1 {
			t.Fatalf("pull %d shows the reset its request voided for: reset %v stale %v, %d voids; want leased, 1 void", i, reset, stale, voids)
		}
	}
	w.at = w.at.Add(-requestLag) // the reset noticed a requestLag ago
	if reset, stale := w.admit(&d, again(3), noReset); !reset || stale || voids != 2 {
		t.Fatalf("a pull shows a reset past the lag: reset %v stale %v, %d voids; want a reset (it may be a later one)", reset, stale, voids)
	}
	e := w.mark()
	w.admit(&e, again(7), noReset)
	f := w.mark() // floor 7
	if !w.noticeRequest("r2") || !w.noticeRequest("r3") || voids != 4 {
		t.Fatalf("two more requests: %d voids, want 4", voids)
	}
	if reset, stale := w.admit(&f, again(1), noReset); !reset || stale || voids != 5 {
		t.Fatalf("a pull from before two resets shows one: reset %v stale %v, %d voids; want a reset", reset, stale, voids)
	}
}
