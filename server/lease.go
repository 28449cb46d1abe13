package server

import (
	"sync"
	"time"
)

// settleOp is what a caller asks of a lease.
type settleOp uint8

const (
	opAck settleOp = iota + 1
	opNak
	opTerm
	opExtend
)

func (op settleOp) String() string {
	switch op {
	case opAck:
		return "ack"
	case opNak:
		return "nak"
	case opTerm:
		return "term"
	case opExtend:
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
	op          settleOp  // the settle in flight or done
	dropAt      time.Time // for a settled lease: when it leaves the table
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
}

// begin starts settling the lease c names with op. It returns the ack subject
// to send to, or "" when the same settle was already done (an idempotent
// retry: nothing to send). Every other outcome is an error.
func (t *leaseTable) begin(c claims, op settleOp, now time.Time) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l, ok := t.leases[c.streamSeq]
	if !ok || l.delivered != c.delivered {
		return "", ErrLeaseExpired
	}
	switch l.state {
	case leaseSettled:
		if l.op == op && op != opExtend {
			return "", nil
		}
		return "", ErrLeaseSettled
	case leaseSettling:
		return "", ErrSettleInProgress
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
func (t *leaseTable) finish(c claims, op settleOp, ok bool, now, newDeadline time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l, found := t.leases[c.streamSeq]
	if !found || l.delivered != c.delivered || l.state != leaseSettling || l.op != op {
		return
	}
	switch {
	case !ok || op == opExtend:
		l.state, l.op = leaseLive, 0
		if ok {
			l.deadline = newDeadline
		}
	default:
		l.state, l.dropAt = leaseSettled, now.Add(t.retention)
		t.unsettled--
	}
}

// sweep drops live leases past their deadline and settled ones past their
// retention.
func (t *leaseTable) sweep(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for seq, l := range t.leases {
		switch {
		case l.state == leaseSettled && now.After(l.dropAt):
			delete(t.leases, seq)
		case l.state == leaseLive && now.After(l.deadline):
			delete(t.leases, seq)
			t.unsettled--
		}
	}
}

// live counts the leases not settled, as of the last sweep.
func (t *leaseTable) live() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.unsettled
}
