package lease

import (
	"testing"
	"time"
)

// Held counts settled leases until a sweep drops them at the end of their
// retention: a consumer whose leases are all settled stays busy, its sweeps
// running, until then. Live does not count them.
func TestHeldCountsSettledLeasesUntilTheirRetentionEnds(t *testing.T) {
	tb := NewTable(retention)
	if n := tb.Held(); n != 0 {
		t.Fatalf("an empty table holds %d", n)
	}
	tb.Add(leaseOf(dlv1, subj1))
	if live, held := tb.Live(), tb.Held(); live != 1 || held != 1 {
		t.Fatalf("a lease handed out: %d live, %d held; want 1 and 1", live, held)
	}
	if _, _, err := tb.Begin(dlv1.Ref(), OpAck, at(time.Second)); err != nil {
		t.Fatal(err)
	}
	tb.Finish(dlv1.Ref(), OpAck, true, at(time.Second), Extension{})
	tb.Sweep(at(2 * time.Second))
	if live, held := tb.Live(), tb.Held(); live != 0 || held != 1 {
		t.Fatalf("the lease acked: %d live, %d held; want 0 and the settled one", live, held)
	}
	tb.Sweep(at(time.Second + retention + time.Minute))
	if live, held := tb.Live(), tb.Held(); live != 0 || held != 0 {
		t.Fatalf("past its retention: %d live, %d held; want none", live, held)
	}
}
