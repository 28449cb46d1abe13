package lease

import "time"

// slotWidth is the span of one slot of the queue: the sweep's own period.
const slotWidth = 100 * time.Millisecond

// queue holds entries by when they are next due, in slots of slotWidth, so
// that a sweep visits only the slots that are due rather than the whole
// table, and queuing an entry is an append. An Extend or a settle queues an
// entry again, later; a sweep skips the stale places.
type queue struct {
	slots map[int64][]*entry
	next  int64 // no slot before it holds entries
}

func slotOf(at time.Time) int64 { return at.UnixNano() / int64(slotWidth) }

// push queues e to be visited once at has passed.
func (q *queue) push(e *entry, at time.Time) {
	s := slotOf(at)
	if q.slots == nil {
		q.slots = make(map[int64][]*entry)
	}
	if len(q.slots) == 0 || s < q.next {
		q.next = s
	}
	q.slots[s] = append(q.slots[s], e)
}

// take removes the entries of every slot up to now's and returns them: the
// caller queues again those not due yet.
func (q *queue) take(now time.Time) []*entry {
	end := slotOf(now)
	var out []*entry
	for ; q.next <= end && len(q.slots) > 0; q.next++ {
		es, ok := q.slots[q.next]
		if !ok {
			continue
		}
		delete(q.slots, q.next)
		if out == nil {
			out = es
		} else {
			out = append(out, es...)
		}
	}
	return out
}

func (q *queue) clear() { clear(q.slots) }
