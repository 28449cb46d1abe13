package consumer

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// A reset an info showed (it counts fewer deliveries than were received
// before it was asked) may have its request pass late, as one a delivery
// showed may: the caller that reset waited for the server's answer and
// pulled at once, and the replica's subscription to the requests hands it
// on a goroutine of its own. That request is the reset the info showed: it
// voids nothing again, and the pull marked after the info, which brings the
// reset's replay, is not taken for one from before a reset (stale: not
// leased, back only after ack_wait). A second request is a second reset.
func TestALateRequestOfAResetAnInfoShowedVoidsNothing(t *testing.T) {
	voids := 0
	w := newResetWatch(0, 0, true, func() { voids++ })
	a := w.mark()
	w.admit(&a, delivery{cseq: 1, sseq: 1, delivered: 1}, noReset)
	w.admit(&a, delivery{cseq: 2, sseq: 2, delivered: 1}, noReset)
	if !w.informed(w.mark(), jetstream.SequenceInfo{}) || voids != 1 {
		t.Fatalf("an info counting 0 after 2 were received: %d voids; want a reset", voids)
	}
	b := w.mark() // the pull sent after the info
	if w.noticeRequest("r1") || voids != 1 {
		t.Fatalf("the shown reset's late request voided again (%d voids)", voids)
	}
	if reset, stale := w.admit(&b, delivery{cseq: 1, sseq: 1, delivered: 1}, noReset); reset || stale {
		t.Fatalf("the replay to the pull sent after the info: reset %v stale %v; want it leased", reset, stale)
	}
	if !w.noticeRequest("r2") || voids != 2 {
		t.Fatalf("a second reset's request did not void (%d voids)", voids)
	}
}
