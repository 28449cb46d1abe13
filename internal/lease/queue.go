package lease

import "time"

// slotWidth is the span of one slot of the queue: the sweep's own period.
const slotWidth = 100 * time.Millisecond

// queue holds the stream sequences of leases by when they are next due, in
// slots of slotWidth, so that a sweep visits only the slots that are due
// rather than the whole table, and queuing is an append. A lease may be
// queued more than once (an Extend, a newer delivery): the sweep checks each
// against the table and skips the stale places. It holds no pointer, so the
// collector does not scan it.
type queue struct {
	slots map[int64][]uint64
	next  int64 // no slot before it holds entries
}

func slotOf(at time.Time) int64 { return at.UnixNano() / int64(slotWidth) }

// push queues seq to be visited once at has passed.
func (q *queue) push(seq uint64, at time.Time) {
	s := slotOf(at)
	if q.slots == nil {
		q.slots = make(map[int64][]uint64)
	}
	if len(q.slots) == 0 || s < q.next {
		q.next = s
	}
	q.slots[s] = append(q.slots[s], seq)
}

// take removes the sequences of every slot up to now's and returns them:
// the caller queues again those not due yet.
func (q *queue) take(now time.Time) []uint64 {
	end := slotOf(now)
	var out []uint64
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
