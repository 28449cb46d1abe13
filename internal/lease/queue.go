package lease

import "time"

// expiry is when an entry may next leave the table.
type expiry struct {
	e  *entry
	at time.Time
}

// queue is a min-heap of expiries by time (container/heap), so that a sweep
// visits only what is due rather than the whole table. An Extend or a settle
// queues an entry again, later; stale expiries are skipped when popped.
type queue []expiry

func (q queue) Len() int           { return len(q) }
func (q queue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q queue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)        { *q = append(*q, x.(expiry)) }
func (q *queue) Pop() any {
	old := *q
	x := old[len(old)-1]
	old[len(old)-1] = expiry{}
	*q = old[:len(old)-1]
	return x
}
