package lease

import "time"

// A lease's deadline follows the server: the consumer's redelivery timing
// may change while leases are out (SetTiming), and a caller may ask a lease
// to last longer than one wait, which its issuer then keeps alive with a
// +WPI before each deadline (Extension.Until, KeptDue).

// Extension is what an Extend that succeeded makes of its lease: the
// deadline its +WPI gives (the server's wait it was dated by, from when it
// was sent), and how long the caller asked it to last.
type Extension struct {
	Deadline time.Time
	Wait     time.Duration
	// Until is the deadline the caller asked for (Extend with a duration):
	// past Deadline, the issuer keeps the lease alive until then. Zero: one
	// wait, as a plain Extend, which ends an earlier keep-alive.
	Until time.Time
	// KeepAlive: the issuer's own +WPI of a lease it keeps alive, which
	// keeps the lease's Until.
	KeepAlive bool
	// Sent is when its +WPI was sent, which restarted the server's clock
	// (zero: not known, as Deadline and Wait say).
	Sent time.Time
}

// timer is what a lease's deadline rests on: the server's clock of the
// delivery, and how long its caller asked the lease to last. All in unix
// ms; 0: none.
type timer struct {
	// clock is when the server's clock of the delivery last started, where
	// that is not the lease's Start: its last +WPI, less RestorePrecision
	// once the lease is cut (the server may date it to the second).
	clock int64
	// asked is the deadline the caller asked for (Extend with a duration)
	// where it comes before the server's: Deadline is cut to it. A shorter
	// wait that brings the server's before it keeps the lease alive until
	// then (SetTiming).
	asked int64
	// keep is when the lease is to last until, past Deadline: its issuer
	// extends it before each deadline until then (KeptDue).
	keep int64
}

// started is when the server's clock of e last started: its last +WPI, or
// its receipt (zero: not known).
func (e *entry) started() time.Time {
	if e.clock != 0 {
		return time.UnixMilli(e.clock)
	}
	return e.Start
}

// restart dates e anew by ext, an Extend that succeeded; cut: the server may
// date it to the second.
func (e *entry) restart(ext Extension, cut bool) {
	sent := ext.Sent
	if sent.IsZero() {
		sent = dated(ext.Deadline, ext.Wait)
	}
	e.Deadline, e.Wait, e.cut, e.clock = ext.Deadline, ext.Wait, cut, sent.UnixMilli()
	if cut {
		e.Deadline = e.Deadline.Add(-RestorePrecision)
		e.cutClock()
	}
}

// cutClock dates the start of the server's clock of e RestorePrecision
// sooner, where it is known.
func (e *entry) cutClock() {
	if s := e.started(); !s.IsZero() {
		e.clock = s.Add(-RestorePrecision).UnixMilli()
	}
}

// SetTiming tells the table the consumer's redelivery timing, as the
// server now has it. Each live lease dated by a longer wait is re-dated to
// when the server will redeliver it (from its last +WPI or receipt, by the
// new wait), so that no lease outlives the server's redelivery; one whose
// caller asked for a later deadline (Extend with a duration) is kept alive
// until then, as one asked past one wait is. One dated by a shorter wait
// keeps its deadline, which the server honours. A lease dated by the old
// timing and recorded later (Add, Finish) is re-dated as it comes. A
// Consume stream holding a re-dated lease is woken to see it. Settled
// leases are kept one new ack_wait. It returns how many leases moved.
func (t *Table) SetTiming(p Policy) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.timing = p
	if p.AckWait > 0 {
		t.retention = p.AckWait
	}
	moved := 0
	for _, e := range t.entries {
		was := e.Deadline
		server := t.timing.redate(&e.Lease, e.started())
		kept := !server.IsZero() && e.asked > server.UnixMilli()
		if kept { // the server now redelivers before the time asked: keep it alive until then
			e.keep, e.asked = max(e.keep, e.asked), 0
			t.keeps[e.StreamSeq] = struct{}{}
		}
		if kept || !e.Deadline.Equal(was) {
			reschedule(&t.due, e)
			moved++
		}
	}
	return moved
}

// reschedule schedules e's sweep in due by its new deadline and wakes the
// Consume stream that holds it, if any; the table's lock is held.
func reschedule(due *queue, e *entry) {
	due.push(e.StreamSeq, e.Deadline)
	if o := e.owner; o != nil {
		select {
		case o.left <- struct{}{}:
		default:
		}
	}
}

// RestorePrecision is how much earlier than it had, at most, a NATS server
// that restarted dates a delivery awaiting its ack: it stores each one's
// time in whole seconds (nats-server's encodeConsumerState, "subsecond
// resolution not needed for recovery"), so it redelivers up to that much
// sooner than its clock said before. A new leader of a replicated consumer
// does likewise.
const RestorePrecision = time.Second

// Shorten ends every live lease RestorePrecision sooner than it did, once:
// the server may have restored its record of the deliveries, which dates
// each no earlier a second time. A lease extended since is dated anew, and
// shortened again; one whose Extend is in flight is shortened as it ends.
// A lease kept alive is extended sooner too, and a Consume stream holding
// one is woken to see it. It returns how many leases it shortened.
func (t *Table) Shorten() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, e := range t.entries {
		if e.state == stateSettling && e.op == OpExtend {
			e.cutExtend = true
		}
		if e.cut {
			continue
		}
		e.Deadline, e.cut = e.Deadline.Add(-RestorePrecision), true
		e.cutClock()
		reschedule(&t.due, e)
		n++
	}
	return n
}

// redate re-dates l by p (a table's timing) if p has a shorter wait for it
// than the one l was dated by, and returns the server's new deadline (zero:
// not re-dated): p's, from start, when the server's clock of l last started
// (zero: not known, as l's deadline, dated by its wait, says). l ends then,
// if not sooner (the time its caller asked for).
func (p Policy) redate(l *Lease, start time.Time) time.Time {
	if l.Wait <= 0 || p.AckWait <= 0 {
		return time.Time{}
	}
	w := p.AckWaitFor(l.Delivered)
	if w >= l.Wait {
		return time.Time{}
	}
	if start.IsZero() {
		start = dated(l.Deadline, l.Wait)
	}
	server := p.Deadline(start, l.Delivered)
	if server.Before(l.Deadline) {
		l.Deadline = server
	}
	l.Wait = w
	return server
}

// dated is when the server's clock started of a lease whose deadline, dated
// by wait, is deadline: no later (it does not know the Early taken off).
func dated(deadline time.Time, wait time.Duration) time.Time {
	return deadline.Add(-(wait - Margin(wait)))
}

// keepUntil sets the keep of e, just extended as ext says, and returns the
// deadline the caller asked for (zero: none): past e's deadline, its keep;
// before it, e's deadline is cut to it (the lease ends when the caller
// asked, the server's redelivery later, unless a shorter wait brings it
// sooner: asked); t.mu is held.
func (t *Table) keepUntil(e *entry, ext Extension) (until time.Time) {
	if !ext.KeepAlive { // the caller's own Extend: its new token carries the later deadline (Held)
		defer func(server int64) { e.Held = max(server, until.UnixMilli()) }(e.Deadline.UnixMilli())
	}
	until = ext.Until
	if ext.KeepAlive {
		if e.keep == 0 {
			return time.Time{} // a plain Extend ended the keep-alive meanwhile
		}
		until = time.UnixMilli(e.keep)
	}
	e.keep, e.asked = 0, 0
	if o := e.owner; o != nil && !ext.KeepAlive && !until.IsZero() {
		o.heard = max(o.heard, until.UnixNano()) // at work on it until then (Silent)
	}
	switch {
	case until.IsZero():
		return time.Time{}
	case !until.After(e.Deadline):
		e.Deadline, e.asked = until, until.UnixMilli()
		t.due.push(e.StreamSeq, until)
		return until
	}
	e.keep = until.UnixMilli()
	t.keeps[e.StreamSeq] = struct{}{}
	return until
}

// KeptDue are the live leases kept alive whose deadline is within lead of
// now: their issuer extends them now. It forgets the keeps that ended.
func (t *Table) KeptDue(now time.Time, lead func(delivered uint64) time.Duration) []Lease {
	t.mu.Lock()
	defer t.mu.Unlock()
	var due []Lease
	for seq := range t.keeps {
		e := t.entries[seq]
		switch {
		case e == nil || e.keep == 0 || !now.Before(e.Deadline):
			delete(t.keeps, seq)
			if e != nil {
				e.keep = 0
			}
		case e.state == stateLive && e.Deadline.Sub(now) <= lead(e.Delivered):
			due = append(due, e.Lease)
		}
	}
	return due
}
