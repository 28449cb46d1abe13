package lease

import (
	"sync"
	"time"

	"github.com/jetgate/jetgate/internal/errs"
)

type state uint8

const (
	stateLive     state = iota // handed out, not settled
	stateSettling              // a settle is in flight to NATS
	stateSettled               // settled; kept for idempotent retries, in Table.settled
)

// entry is a lease not settled yet and what has been done with it.
type entry struct {
	Lease
	state state // live or settling
	// maybe is an Ack, Nak or Term that was sent but never confirmed: the
	// server may have applied it, so only that same settle may follow.
	maybe Op
	op    Op // the settle in flight
	// holder and handed say to whom and when (unix ms) the lease was
	// handed out; handed 0: not handed out (yet). See holders.go.
	holder string
	handed int64
	owner  *Owner // the Consume stream holding it; nil: none (owner.go)
	timer         // the server's clock of it, and how long its caller asked it to last (timing.go)
	// cut: Deadline was brought forward for a server that dates the
	// delivery to the second (Shorten), which it dates no earlier again
	// until it is extended. cutExtend: it was, while an Extend was in
	// flight, whose new deadline the server may date so too.
	cut, cutExtend bool
	takenBack      bool // extended unowned (its stream ended): no orphan's Nak (Ref.Orphan)
}

// settled is a settled lease, kept for retries: what tells its delivery
// apart and which settle it was. It holds no pointer, so the collector
// never scans the many a busy consumer keeps for an ack_wait.
type settled struct {
	delivered   uint64
	consumerSeq uint64
	first       int64 // as entry's
	start       int64 // the entry's Start in unix ms (0: not known)
	dropAt      int64 // unix ns: when it leaves the table
	op          Op
}

// Table holds one consumer's leases by stream sequence. A newer delivery of
// a message replaces the older one, which voids older tokens. Live leases
// are bounded by the consumer's max_ack_pending; settled ones stay for the
// retention (one ack_wait) so that a repeated settle succeeds without
// reaching NATS. It is safe for concurrent use.
type Table struct {
	mu        sync.Mutex
	entries   map[uint64]*entry  // live and settling leases
	settled   map[uint64]settled // settled leases, until their retention ends
	retention time.Duration
	timing    Policy              // the consumer's redelivery timing, as last told (SetTiming)
	due       queue               // stream sequences of entries, by deadline
	keeps     map[uint64]struct{} // stream sequences of entries with a keep, or that had one
	drops     queue               // stream sequences of settled leases, by dropAt
	// top is the highest stream sequence the table has held: a fresh
	// message above it is in neither map, and is not looked up there.
	top uint64
}

// NewTable returns an empty table that keeps settled leases for retention.
func NewTable(retention time.Duration) *Table {
	return &Table{entries: make(map[uint64]*entry), settled: make(map[uint64]settled), retention: retention, keeps: make(map[uint64]struct{})}
}

// delivered is how often the table's lease of the message seq was
// delivered, live or settled.
func (t *Table) delivered(seq uint64) (uint64, bool) {
	if seq > t.top {
		return 0, false
	}
	if e, ok := t.entries[seq]; ok {
		return e.Delivered, true
	}
	s, ok := t.settled[seq]
	return s.delivered, ok
}

// Added is what Add made of a delivery.
type Added uint8

const (
	// AddedFresh: a delivery recorded, or a late copy of an older one
	// ignored.
	AddedFresh Added = iota
	// AddedReset: the delivery shows the consumer was reset; every lease
	// held is void.
	AddedReset
	// AddedEarly: a redelivery came while the lease it replaces still had
	// time left, so the server's redelivery timing is shorter than the one
	// the lease was dated by (an operator edited the consumer).
	AddedEarly
)

// Add records a fresh delivery. An entry for a newer delivery is kept.
//
// It reports a reset of the consumer (ADR-60) when a live delivery comes of
// a message held already with as many deliveries or more: a redelivery
// counts one more, and comes only after the older delivery's deadline; only
// a reset restarts the count. Every lease the table held is void then
// (their messages are delivered anew), and it keeps only l. A redelivery
// before the older lease's deadline is AddedEarly.
func (t *Table) Add(l Lease) Added {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	old, ok := t.delivered(l.StreamSeq)
	switch {
	case ok && old >= l.Delivered && now.Before(l.Deadline):
		t.voidLocked()
		t.timing.redate(&l, l.Start)
		l.First = l.Deadline.UnixMilli()
		t.put(&entry{Lease: l})
		return AddedReset
	case ok && old > l.Delivered:
		return AddedFresh // a late copy of an older delivery
	}
	added := AddedFresh
	if e := t.entries[l.StreamSeq]; e != nil && e.Delivered < l.Delivered && now.Before(e.Deadline) {
		added = AddedEarly
	}
	t.timing.redate(&l, l.Start)
	l.First = l.Deadline.UnixMilli()
	t.put(&entry{Lease: l})
	return added
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
	if !ok || !now.Before(e.Deadline) {
		return false
	}
	if rs, es := startMs(r.Start), startMs(e.Start); e.Delivered == r.Delivered && rs != 0 && es != 0 && rs != es {
		return es > rs // received after r started (Ref.names)
	}
	return e.Delivered < r.Delivered || e.Delivered == r.Delivered && e.First > r.Deadline.UnixMilli()
}

// Holds reports whether delivery r is leased live, before its deadline and
// not being settled; or being extended, whatever its deadline: the Extend
// may yet land, and it is live again.
func (t *Table) Holds(r Ref, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.lookup(r)
	return e != nil && (e.state == stateLive && now.Before(e.Deadline) || e.state == stateSettling && e.op == OpExtend)
}

// Void drops every lease: the consumer was reset (none may settle after it).
func (t *Table) Void() {
	t.mu.Lock()
	t.voidLocked()
	t.mu.Unlock()
}

func (t *Table) voidLocked() {
	for _, e := range t.entries {
		t.unown(e)
	}
	clear(t.entries)
	clear(t.settled)
	clear(t.keeps)
	t.due.clear()
	t.drops.clear()
}

// Adopt records a lease known only from its token, for a settle whose issuer
// is gone. An entry for a newer delivery is kept, and so is one for the same
// delivery, so a settled lease stays settled; a live one takes the later of
// the two deadlines (an Extend's token carries a later one than the
// delivery's first).
func (t *Table) Adopt(l Lease) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old, ok := t.delivered(l.StreamSeq)
	e := t.entries[l.StreamSeq]
	switch {
	case !ok || old < l.Delivered:
		l.First = l.Deadline.UnixMilli()
		t.put(&entry{Lease: l})
	case e != nil && e.Delivered == l.Delivered && e.state == stateLive && l.Deadline.After(e.TokenDeadline()):
		// An Extend's token (a token of the delivery carrying its first
		// deadline moves nothing, the lease may have been cut below it).
		e.Deadline, e.cut, e.clock = l.Deadline, false, startMs(l.Start) // its +WPI (0: not known)
		t.due.push(e.StreamSeq, e.Deadline)
	}
}

// put stores e in place of any lease of the same message; t.mu is held.
func (t *Table) put(e *entry) {
	if e.StreamSeq > t.top {
		t.top = e.StreamSeq
	} else {
		delete(t.settled, e.StreamSeq)
	}
	if old := t.entries[e.StreamSeq]; old != nil {
		lapse(old, e.Start) // redelivered
		t.unown(old)
	}
	t.entries[e.StreamSeq] = e
	t.due.push(e.StreamSeq, e.Deadline)
}

// lookup returns the unsettled entry of delivery r; t.mu is held.
func (t *Table) lookup(r Ref) *entry {
	if e, ok := t.entries[r.StreamSeq]; ok && r.names(e.Delivered, e.ConsumerSeq, e.First, startMs(e.Start)) {
		return e
	}
	return nil
}

// lookupSettled returns the settled lease of delivery r; t.mu is held.
func (t *Table) lookupSettled(r Ref) (settled, bool) {
	s, ok := t.settled[r.StreamSeq]
	return s, ok && r.names(s.delivered, s.consumerSeq, s.first, s.start)
}

// Begin starts settling delivery r with op. It returns the ack subject to
// send to, or "" when the same settle was already done (an idempotent retry:
// nothing to send), and whether it is the retry of a settle whose outcome
// is unknown (Unsure): its caller, told so, may have settled the token
// otherwise through another replica meanwhile, so such a retry asks the
// ledger first, as a settle of an adopted lease does. Every other outcome
// is an error: errs.ErrLeaseExpired, errs.ErrLeaseSettled or
// errs.ErrSettleInProgress.
func (t *Table) Begin(r Ref, op Op, now time.Time) (subject string, retry bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.lookup(r)
	if e == nil {
		if s, ok := t.lookupSettled(r); ok {
			if s.op == op && op != OpExtend {
				return "", false, nil
			}
			return "", false, errs.ErrLeaseSettled
		}
		return "", false, errs.ErrLeaseExpired
	}
	if e.state == stateSettling {
		return "", false, errs.ErrSettleInProgress
	}
	if r.Orphan && e.takenBack {
		return "", false, errs.ErrLeaseSettled
	}
	if e.maybe != 0 && e.maybe != op {
		return "", false, errs.ErrLeaseSettled
	}
	if e.maybe == OpNak {
		// A Nak that may have been applied is not sent again: applied, the
		// server redelivered at once, and a second would land on that
		// delivery. Done; at worst the message returns after its wait.
		return "", false, nil
	}
	if !now.Before(e.Deadline) {
		return "", false, errs.ErrLeaseExpired
	}
	e.state, e.op = stateSettling, op
	e.takenBack = e.takenBack || op == OpExtend && e.owner == nil
	return e.AckSubject, e.maybe != 0, nil
}

// Overdue returns the indexes of the deliveries rs whose settle with op
// Begin started and whose lease's deadline has passed by now: a settle that
// waited (for another in flight, the ledger, a catch-up) past it would reach
// the server after its redelivery, maybe to another holder, and land there.
// Each is live again, for the sweep to drop; nothing of it is to be sent.
func (t *Table) Overdue(rs []Ref, op Op, now time.Time) []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	var late []int
	for j, r := range rs {
		e := t.lookup(r)
		if e == nil || e.state != stateSettling || e.op != op || now.Before(e.Deadline) {
			continue
		}
		e.state, e.op = stateLive, 0
		late = append(late, j)
	}
	return late
}

// Finish records the outcome of a settle that Begin started. On failure the
// lease is live again, so the caller may retry. For an Extend that succeeded,
// the lease stays live with the new deadline (earlier than ext's if the
// consumer's timing got shorter meanwhile), and it returns that deadline,
// the server's, and the one the caller asked for, if any (keepUntil).
func (t *Table) Finish(r Ref, op Op, ok bool, now time.Time, ext Extension) (deadline, until time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.lookup(r)
	if e == nil || e.state != stateSettling || e.op != op {
		return ext.Deadline, ext.Until
	}
	if o := e.owner; o != nil && ok && !ext.KeepAlive {
		o.settled(t.entries, e, now.UnixNano()) // the caller's own settle (heard until later: an Extend's duration)
	}
	switch {
	case !ok || op == OpExtend:
		e.state, e.op = stateLive, 0
		cut := e.cutExtend // the server may date this Extend to the second
		e.cutExtend = false
		if ok {
			e.restart(ext, cut)
			t.timing.redate(&e.Lease, e.started())
			server := e.Deadline // before keepUntil, which may cut it
			return server, t.keepUntil(e, ext)
		}
	default:
		dropAt := now.Add(t.retention)
		t.unown(e)
		delete(t.entries, e.StreamSeq)
		t.settled[e.StreamSeq] = settled{delivered: e.Delivered, consumerSeq: e.ConsumerSeq, first: e.First, start: startMs(e.Start), dropAt: dropAt.UnixNano(), op: op}
		t.drops.push(e.StreamSeq, dropAt)
	}
	return time.Time{}, time.Time{}
}

// Unsure records a settle that Begin started, that was sent, and whose
// outcome is unknown (its confirmation timed out, or the caller left). The
// lease is live again for a retry of the same settle (of a Nak, answered
// as done without sending it); any other is refused, since the first may
// have been applied.
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
// retention. It visits only the queued leases whose slot is due.
func (t *Table) Sweep(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, seq := range t.due.take(now) {
		e, ok := t.entries[seq]
		switch {
		case !ok:
			// settled, or dropped already
		case e.state == stateSettling:
			t.due.push(seq, now.Add(time.Second))
		case now.After(e.Deadline):
			lapse(e, now)
			t.unown(e)
			delete(t.entries, seq)
		default:
			t.due.push(seq, e.Deadline) // not due yet, extended, or a newer delivery
		}
	}
	for _, seq := range t.drops.take(now) {
		s, ok := t.settled[seq]
		switch {
		case !ok:
		case now.UnixNano() > s.dropAt:
			delete(t.settled, seq)
		case slotOf(time.Unix(0, s.dropAt)) <= slotOf(now):
			t.drops.push(seq, time.Unix(0, s.dropAt)) // taken from its slot a little early
		} // else a later settle of the message queued it at its own dropAt
	}
}

// Live counts the leases not settled, as of the last sweep.
func (t *Table) Live() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}

// Held counts the leases the table holds, settled ones kept for retries
// included: while any, it has to be swept.
func (t *Table) Held() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries) + len(t.settled)
}
