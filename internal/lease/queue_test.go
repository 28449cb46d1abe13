package lease

import (
	"slices"
	"testing"
	"time"
)

func sorted(seqs []uint64) []uint64 {
	slices.Sort(seqs)
	return seqs
}

// The queue gives back what is due by slot, whatever order it was queued
// in, including a slot before the first one queued and after a long gap.
func TestQueueTakesWhatIsDue(t *testing.T) {
	var q queue
	q.push(1, at(10*time.Second))
	q.push(2, at(time.Second)) // before the first one queued
	q.push(3, at(10*time.Second+slotWidth/2))
	q.push(4, at(2*time.Hour))

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
		if got := sorted(q.take(at(s.now))); !slices.Equal(got, s.want) {
			t.Errorf("take(t0+%v) = %v, want %v", s.now, got, s.want)
		}
	}
	if len(q.slots) != 0 {
		t.Errorf("%d slots left, want none", len(q.slots))
	}
	q.push(5, at(time.Minute)) // queued again after it emptied, in the past
	if got := sorted(q.take(at(3 * time.Hour))); !slices.Equal(got, []uint64{5}) {
		t.Errorf("take after emptying = %v, want [5]", got)
	}
}
