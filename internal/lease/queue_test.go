package lease

import (
	"slices"
	"testing"
	"time"
)

func seqsOf(es []*entry) []uint64 {
	var out []uint64
	for _, e := range es {
		out = append(out, e.StreamSeq)
	}
	slices.Sort(out)
	return out
}

// The queue gives back what is due by slot, whatever order it was queued
// in, including a slot before the first one queued and after a long gap.
func TestQueueTakesWhatIsDue(t *testing.T) {
	var q queue
	e := func(s uint64) *entry { return &entry{Lease: Lease{StreamSeq: s}} }
	q.push(e(1), at(10*time.Second))
	q.push(e(2), at(time.Second)) // before the first one queued
	q.push(e(3), at(10*time.Second+slotWidth/2))
	q.push(e(4), at(2*time.Hour))

	steps := []struct {
		now  time.Duration
		want []uint64
	}{
		{0, nil},
		{time.Second, []uint64{2}},
		{time.Second, nil}, // taken once
		{10 * time.Second, []uint64{1, 3}},
		{time.Hour, nil},
		{2*time.Hour + slotWidth, []uint64{4}}, // after a long gap
		{3 * time.Hour, nil},
	}
	for _, s := range steps {
		if got := seqsOf(q.take(at(s.now))); !slices.Equal(got, s.want) {
			t.Errorf("take(t0+%v) = %v, want %v", s.now, got, s.want)
		}
	}
	if len(q.slots) != 0 {
		t.Errorf("%d slots left, want none", len(q.slots))
	}
	q.push(e(5), at(time.Minute)) // queued again after it emptied, in the past
	if got := seqsOf(q.take(at(3 * time.Hour))); !slices.Equal(got, []uint64{5}) {
		t.Errorf("take after emptying = %v, want [5]", got)
	}
}
