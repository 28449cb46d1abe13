package lease

import (
	"errors"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/errs"
)

// A lease its caller extends once its stream let it go, or while it did,
// is the caller's again: the orphan's Nak that was to give it back is
// refused (LEASE_SETTLED), whichever comes first of the Nak's check and the
// Extend's end. Another lease of the stream is given back; the caller's own
// Nak of a lease it took back is sent as any.
func TestAnOrphansNakOfALeaseItsCallerTookBackIsRefused(t *testing.T) {
	tb, o, rs := ownedTable(t)
	ext := Extension{Deadline: at(2 * leaseTTL), Wait: leaseTTL}
	if _, _, err := tb.Begin(rs[0], OpExtend, at(time.Second)); err != nil { // in flight as the stream ends
		t.Fatal(err)
	}
	tb.Disown(o, time.Time{})
	tb.Finish(rs[0], OpExtend, true, at(time.Second), ext)
	if _, _, err := tb.Begin(rs[1], OpExtend, at(time.Second)); err != nil { // after it ended
		t.Fatal(err)
	}
	tb.Finish(rs[1], OpExtend, true, at(time.Second), ext)
	for i, r := range rs {
		r.Orphan = true
		_, _, err := tb.Begin(r, OpNak, at(2*time.Second))
		switch {
		case i < 2 && !errors.Is(err, errs.ErrLeaseSettled):
			t.Errorf("lease %d, extended by its caller: the orphan's Nak began (%v); want LEASE_SETTLED", i+1, err)
		case i == 2 && err != nil:
			t.Errorf("lease 3, not extended: the orphan's Nak %v; want it sent", err)
		}
	}
	if _, _, err := tb.Begin(rs[0], OpNak, at(2*time.Second)); err != nil {
		t.Errorf("the caller's own Nak of the lease it took back: %v", err)
	}
}
