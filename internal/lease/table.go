package lease

import (
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/jetgate/jetgate/internal/errs"
)

// Lease is one delivery of a message and where to settle it.
type Lease struct {
	StreamSeq   uint64
	ConsumerSeq uint64
	Delivered   uint64
	Deadline    time.Time // no settle is sent at or after it
	AckSubject  string
	// Origin is the message's creation context, kept only while tracing,
	// for the settle spans' links.
	Origin *trace.SpanContext
}

// Ref names one delivery of a message: a token's stream sequence and
// delivery count and, when the token says, its consumer sequence and
// deadline. After a consumer reset the server delivers a message again with
// its delivery count restarted, so that count alone does not tell two
// deliveries apart: the consumer sequence does, and where that restarted
// too, the deadline (a token of the delivery carries its first deadline, or
// an Extend's later one; a token of an earlier delivery, an earlier one).
type Ref struct {
	StreamSeq   uint64
	Delivered   uint64
	ConsumerSeq uint64    // 0: any
	Deadline    time.Time // zero: any
}

// Ref is the delivery l is a lease of.
func (l Lease) Ref() Ref { return Ref{StreamSeq: l.StreamSeq, Delivered: l.Delivered} }

type state uint8

const (
	stateLive     state = iota // handed out, not settled
	stateSettling              // a settle is in flight to NATS
	stateSettled               // settled; kept for idempotent retries
)

// entry is a lease in the table and what has been done with it.
type entry struct {
	Lease
	state state
	// maybe is an Ack, Nak or Term that was sent but never confirmed: the
	// server may have applied it, so only that same settle may follow.
	maybe  Op
	op     Op        // the settle in flight or done
	dropAt time.Time // for a settled lease: when it leaves the table
	first  int64     // the delivery's first deadline, in unix ms as tokens carry it
}

// Table holds one consumer's leases by stream sequence. A newer delivery of
// a message replaces the older one, which voids older tokens. Live leases
// are bounded by the consumer's max_ack_pending; settled ones stay for the
// retention (one ack_wait) so that a repeated settle succeeds without
// reaching NATS. It is safe for concurrent use.
type Table struct {
	mu        sync.Mutex
	entries   map[uint64]*entry
	unsettled int // entries not settled; those past their deadline go at the next sweep
	retention time.Duration
	due       queue
}

// NewTable returns an empty table that keeps settled leases for retention.
func NewTable(retention time.Duration) *Table {
	return &Table{entries: make(map[uint64]*entry), retention: retention}
}

// Add records a fresh delivery. An entry for a newer delivery is kept.
//
// It reports a reset of the consumer (ADR-60) when a live delivery comes of
// a message held already with as many deliveries or more: a redelivery
// counts one more, and comes only after the older delivery's deadline; only
// a reset restarts the count. Every lease the table held is void then
// (their messages are delivered anew), and it keeps only l.
func (t *Table) Add(l Lease) (reset bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old, ok := t.entries[l.StreamSeq]
	switch {
	case ok && old.Delivered >= l.Delivered && time.Now().Before(l.Deadline):
		t.voidLocked()
		reset = true
	case ok && old.Delivered > l.Delivered:
		return false // a late copy of an older delivery
	}
	t.put(&entry{Lease: l, first: l.Deadline.UnixMilli()})
	return reset
}

// HoldsLater reports whether the table holds, live, a delivery of r's
// message made after a consumer reset that r is from before: delivered as
// often as r but first received after it, or fewer times (while a lease of
// the message is live, only a reset restarts its count). A delivery counted
// more often is a plain redelivery, whose settles the issuer and the ledger
// decide.
func (t *Table) HoldsLater(r Ref, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.entries[r.StreamSeq]
	if !ok || e.state == stateSettled || !now.Before(e.Deadline) {
		return false
	}
	return e.Delivered < r.Delivered || (e.Delivered == r.Delivered && e.first > r.Deadline.UnixMilli())
}

// Void drops every lease: the consumer was reset, and no lease from before
// may settle a delivery made after it.
func (t *Table) Void() {
	t.mu.Lock()
	t.voidLocked()
	t.mu.Unlock()
}

func (t *Table) voidLocked() {
	clear(t.entries)
	t.unsettled = 0
	t.due.clear()
}

// Adopt records a lease known only from its token, for a settle whose issuer
// is gone. An entry for a newer delivery is kept, and so is one for the same
// delivery, so a settled lease stays settled; a live one takes the later of
// the two deadlines (an Extend's token carries a later one than the
// delivery's first).
func (t *Table) Adopt(l Lease) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old, ok := t.entries[l.StreamSeq]
	switch {
	case !ok || old.Delivered < l.Delivered:
		t.put(&entry{Lease: l, first: l.Deadline.UnixMilli()})
	case old.Delivered == l.Delivered && old.state == stateLive && l.Deadline.After(old.Deadline):
		old.Deadline = l.Deadline
		t.due.push(old, old.Deadline)
	}
}

// put stores e in place of any entry of the same message; t.mu is held.
func (t *Table) put(e *entry) {
	if old, ok := t.entries[e.StreamSeq]; ok && old.state != stateSettled {
		t.unsettled--
	}
	t.entries[e.StreamSeq] = e
	t.unsettled++
	t.due.push(e, e.Deadline)
}

// lookup returns the entry of delivery r; t.mu is held.
func (t *Table) lookup(r Ref) *entry {
	e, ok := t.entries[r.StreamSeq]
	switch {
	case !ok || e.Delivered != r.Delivered:
		return nil
	case r.ConsumerSeq != 0 && r.ConsumerSeq != e.ConsumerSeq:
		return nil // a delivery from before a reset
	case !r.Deadline.IsZero() && r.Deadline.UnixMilli() < e.first:
		return nil // likewise, where the consumer sequence restarted too
	}
	return e
}

// Begin starts settling delivery r with op. It returns the ack subject to
// send to, or "" when the same settle was already done (an idempotent retry:
// nothing to send). Every other outcome is an error: errs.ErrLeaseExpired,
// errs.ErrLeaseSettled or errs.ErrSettleInProgress.
func (t *Table) Begin(r Ref, op Op, now time.Time) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.lookup(r)
	if e == nil {
		return "", errs.ErrLeaseExpired
	}
	switch e.state {
	case stateSettled:
		if e.op == op && op != OpExtend {
			return "", nil
		}
		return "", errs.ErrLeaseSettled
	case stateSettling:
		return "", errs.ErrSettleInProgress
	}
	if e.maybe != 0 && e.maybe != op {
		return "", errs.ErrLeaseSettled
	}
	if !now.Before(e.Deadline) {
		return "", errs.ErrLeaseExpired
	}
	e.state, e.op = stateSettling, op
	return e.AckSubject, nil
}

// Finish records the outcome of a settle that Begin started. On failure the
// lease is live again, so the caller may retry. For an Extend that succeeded,
// the lease stays live with the new deadline.
func (t *Table) Finish(r Ref, op Op, ok bool, now, newDeadline time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.lookup(r)
	if e == nil || e.state != stateSettling || e.op != op {
		return
	}
	switch {
	case !ok || op == OpExtend:
		e.state, e.op = stateLive, 0
		if ok {
			e.Deadline = newDeadline
		}
	default:
		e.state, e.dropAt = stateSettled, now.Add(t.retention)
		e.AckSubject = "" // never sent to again: kept for one ack_wait, it need not hold the subject
		t.unsettled--
		t.due.push(e, e.dropAt)
	}
}

// Unsure records a settle that Begin started, that was sent, and whose
// outcome is unknown (its confirmation timed out, or the caller left). The
// lease is live again for a retry of the same settle; any other is refused,
// since the first may have been applied.
func (t *Table) Unsure(r Ref, op Op) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.lookup(r)
	if e == nil || e.state != stateSettling || e.op != op {
		return
	}
	e.state, e.op = stateLive, 0
	if op != OpExtend { // a +WPI that may or may not have landed changes nothing
		e.maybe = op
	}
}

// Sweep drops live leases past their deadline and settled ones past their
// retention. It visits only the queued entries whose slot is due.
func (t *Table) Sweep(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.due.take(now) {
		if t.entries[e.StreamSeq] != e {
			continue // replaced by a newer delivery, or dropped already
		}
		switch e.state {
		case stateSettled:
			switch {
			case now.After(e.dropAt):
				delete(t.entries, e.StreamSeq)
			case slotOf(e.dropAt) <= slotOf(now):
				t.due.push(e, e.dropAt) // taken from its slot a little early
			} // else it is queued at dropAt already, since it was settled
		case stateLive:
			if now.After(e.Deadline) {
				delete(t.entries, e.StreamSeq)
				t.unsettled--
			} else {
				t.due.push(e, e.Deadline) // not due yet, or extended
			}
		case stateSettling:
			t.due.push(e, now.Add(time.Second))
		}
	}
}

// Live counts the leases not settled, as of the last sweep.
func (t *Table) Live() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.unsettled
}

// Origins are the creation contexts of the deliveries rs that the table
// holds with one (zero for the others).
func (t *Table) Origins(rs []Ref) []trace.SpanContext {
	out := make([]trace.SpanContext, len(rs))
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, r := range rs {
		if e := t.lookup(r); e != nil && e.Origin != nil {
			out[i] = *e.Origin
		}
	}
	return out
}
