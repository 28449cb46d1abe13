package server

import (
	"container/heap"
	"sync"
	"time"
)

// SettleOp is what a caller asks of a lease.
type SettleOp uint8

// The settles: +ACK, -NAK, +TERM and +WPI.
const (
	OpAck SettleOp = iota + 1
	OpNak
	OpTerm
	OpExtend
)

func (op SettleOp) String() string {
	switch op {
	case OpAck:
		return "ack"
	case OpNak:
		return "nak"
	case OpTerm:
		return "term"
	case OpExtend:
		return "extend"
	}
	return "unknown"
}

type leaseState uint8

const (
	leaseLive     leaseState = iota // handed out, not settled
	leaseSettling                   // a settle is in flight to NATS
	leaseSettled                    // settled; kept for idempotent retries
)

// lease is one delivery handed out by this gateway (or, when its issuer is
// gone, adopted by it from a token).
type lease struct {
	streamSeq   uint64
	consumerSeq uint64
	delivered   uint64
	deadline    time.Time // no settle is sent after it
	ackSubject  string
	state       leaseState
	// maybe is an Ack, Nak or Term that was sent but never confirmed: the
	// server may have applied it, so only that same settle may follow.
	maybe  SettleOp
	op     SettleOp  // the settle in flight or done
	dropAt time.Time // for a settled lease: when it leaves the table
}

// leaseTable holds one consumer's leases by stream sequence. A newer delivery
// of a message replaces the older one, which voids older tokens. Live leases
// are bounded by the consumer's max_ack_pending; settled ones stay for one
// ack_wait so that a repeated settle succeeds without reaching NATS.
type leaseTable struct {
	mu        sync.Mutex
	leases    map[uint64]*lease
	unsettled int // entries not settled; those past their deadline go at the next sweep
	retention time.Duration
	// due holds leases by when they may next be dropped (an Extend or a
	// settle queues a lease again, later), so that a sweep visits only what
	// is due rather than the whole table.
	due expiries
}

type expiry struct {
	l  *lease
	at time.Time
}

// expiries is a min-heap of expiry by time.
type expiries []expiry

func (e expiries) Len() int           { return len(e) }
func (e expiries) Less(i, j int) bool { return e[i].at.Before(e[j].at) }
func (e expiries) Swap(i, j int)      { e[i], e[j] = e[j], e[i] }
func (e *expiries) Push(x any)        { *e = append(*e, x.(expiry)) }
func (e *expiries) Pop() any {
	old := *e
	x := old[len(old)-1]
	old[len(old)-1] = expiry{}
	*e = old[:len(old)-1]
	return x
}

func newLeaseTable(retention time.Duration) *leaseTable {
	return &leaseTable{leases: make(map[uint64]*lease), retention: retention}
}

// add records a fresh delivery.
func (t *leaseTable) add(l *lease) {
	t.mu.Lock()
	if old, ok := t.leases[l.streamSeq]; !ok || old.delivered <= l.delivered {
		t.put(l)
	}
	t.mu.Unlock()
}

// adopt records a lease known only from its token, for a settle whose issuer
// is gone. An entry for a newer delivery is kept.
func (t *leaseTable) adopt(c claims, ackSubject string) {
	t.mu.Lock()
	if old, ok := t.leases[c.streamSeq]; !ok || old.delivered < c.delivered {
		t.put(&lease{
			streamSeq:   c.streamSeq,
			consumerSeq: c.consumerSeq,
			delivered:   c.delivered,
			deadline:    c.deadline,
			ackSubject:  ackSubject,
		})
	}
	t.mu.Unlock()
}

// put stores l in place of any lease of the same message; t.mu is held.
func (t *leaseTable) put(l *lease) {
	if old, ok := t.leases[l.streamSeq]; ok && old.state != leaseSettled {
		t.unsettled--
	}
	t.leases[l.streamSeq] = l
	t.unsettled++
	t.schedule(l, l.deadline)
}

func (t *leaseTable) schedule(l *lease, at time.Time) {
	heap.Push(&t.due, expiry{l, at})
}

// begin starts settling the lease c names with op. It returns the ack subject
// to send to, or "" when the same settle was already done (an idempotent
// retry: nothing to send). Every other outcome is an error.
func (t *leaseTable) begin(c claims, op SettleOp, now time.Time) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l, ok := t.leases[c.streamSeq]
	if !ok || l.delivered != c.delivered {
		return "", ErrLeaseExpired
	}
	switch l.state {
	case leaseSettled:
		if l.op == op && op != OpExtend {
			return "", nil
		}
		return "", ErrLeaseSettled
	case leaseSettling:
		return "", ErrSettleInProgress
	}
	if l.maybe != 0 && l.maybe != op {
		return "", ErrLeaseSettled
	}
	if !now.Before(l.deadline) {
		return "", ErrLeaseExpired
	}
	l.state, l.op = leaseSettling, op
	return l.ackSubject, nil
}

// finish records the outcome of a settle that begin started. On failure the
// lease is live again, so the caller may retry. For an Extend that succeeded,
// the lease stays live with the new deadline.
func (t *leaseTable) finish(c claims, op SettleOp, ok bool, now, newDeadline time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l, found := t.leases[c.streamSeq]
	if !found || l.delivered != c.delivered || l.state != leaseSettling || l.op != op {
		return
	}
	switch {
	case !ok || op == OpExtend:
		l.state, l.op = leaseLive, 0
		if ok {
			l.deadline = newDeadline
		}
	default:
		l.state, l.dropAt = leaseSettled, now.Add(t.retention)
		t.unsettled--
		t.schedule(l, l.dropAt)
	}
}

// unsure records a settle that begin started, that was sent, and whose
// outcome is unknown (its confirmation timed out, or the caller left). The
// lease is live again for a retry of the same settle; any other is refused,
// since the first may have been applied.
func (t *leaseTable) unsure(c claims, op SettleOp) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l, found := t.leases[c.streamSeq]
	if !found || l.delivered != c.delivered || l.state != leaseSettling || l.op != op {
		return
	}
	l.state, l.op = leaseLive, 0
	if op != OpExtend { // a +WPI that may or may not have landed changes nothing
		l.maybe = op
	}
}

// sweep drops live leases past their deadline and settled ones past their
// retention. It visits only the queued leases that are due.
func (t *leaseTable) sweep(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for len(t.due) > 0 && t.due[0].at.Before(now) {
		l := heap.Pop(&t.due).(expiry).l
		if t.leases[l.streamSeq] != l {
			continue // replaced by a newer delivery, or dropped already
		}
		switch l.state {
		case leaseSettled:
			if now.After(l.dropAt) {
				delete(t.leases, l.streamSeq)
			} // else it was queued again when it was settled
		case leaseLive:
			if now.After(l.deadline) {
				delete(t.leases, l.streamSeq)
				t.unsettled--
			} else {
				t.schedule(l, l.deadline) // extended
			}
		case leaseSettling:
			t.schedule(l, now.Add(time.Second))
		}
	}
}

// live counts the leases not settled, as of the last sweep.
func (t *leaseTable) live() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.unsettled
}
