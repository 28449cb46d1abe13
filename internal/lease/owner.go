package lease

import "time"

// Owner is a Consume stream's hold on leases of a table: which ones it
// holds and their bytes, which bound what it may pull next. The table alone
// changes it, under its lock: a lease is claimed, then leaves when it is
// settled, expires, is voided by a reset, is replaced by a newer delivery
// of its message, or is disowned when the stream ends. Its deadline stays
// the table's.
type Owner struct {
	sizes map[uint64]int64 // by stream sequence
	bytes int64
	left  chan struct{}
	// heard is when the stream's caller last showed it works on what it
	// holds (unix ns): a settle or an Extend of one of its leases, or the
	// first lease claimed while it held none; after an Extend with a
	// duration, the time it asked for (it works on it until then).
	heard int64
	// lapsed: a lease of o lapsed unsettled (at its deadline, or replaced
	// by a redelivery) since the caller was heard of or o last claimed
	// while holding none; lapses counts those claims that followed such a
	// lapse with no word from the caller since. A run of lapses is NATS's
	// usual retry (a message left to come back at ack_wait); two in a row
	// are the caller gone (Silent): else a caller gone for good on a
	// consumer whose ack_wait is shorter than the silence would have its
	// messages leased again every ack_wait, never silent for long enough.
	lapsed bool
	lapses int
}

// hear records that the caller was heard of at ns (unix ns).
func (o *Owner) hear(ns int64) {
	o.heard, o.lapsed, o.lapses = max(o.heard, ns), false, 0
}

// settled records the caller's own settle or Extend of e at now (unix ns):
// heard now, or later while it works on another lease it holds that it
// extended by a duration past its deadline (its keep); an Extend's own
// duration comes after, from keepUntil. Before, an Extend by an hour then
// an Ack left the caller heard of for the hour, silent or not.
func (o *Owner) settled(entries map[uint64]*entry, e *entry, now int64) {
	heard := now
	if o.heard > now { // it asked for time: is it at work on another lease still?
		for seq := range o.sizes {
			if x := entries[seq]; x != nil && x != e {
				heard = max(heard, x.keep*int64(time.Millisecond))
			}
		}
	}
	o.heard, o.lapsed, o.lapses = heard, false, 0
}

// NewOwner returns an owner of no lease.
func NewOwner() *Owner {
	return &Owner{sizes: make(map[uint64]int64), left: make(chan struct{}, 1)}
}

// Left receives when a lease has left the owner: room to pull again.
func (o *Owner) Left() <-chan struct{} { return o.left }

// Claim records that o holds the deliveries rs, of sizes bytes each, from
// now. A delivery the table no longer holds (voided, or replaced) is
// skipped.
func (t *Table) Claim(o *Owner, rs []Ref, sizes []int64, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(o.sizes) == 0 {
		o.heard = now.UnixNano()
		if o.lapsed {
			o.lapsed, o.lapses = false, o.lapses+1
		}
	}
	for i, r := range rs {
		e := t.lookup(r)
		if e == nil || e.owner == o {
			continue
		}
		t.unown(e)
		e.owner = o
		o.sizes[e.StreamSeq] = sizes[i]
		o.bytes += sizes[i]
	}
}

// Load is how many leases o holds, and their bytes.
func (t *Table) Load(o *Owner) (n int, bytes int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(o.sizes), o.bytes
}

// Owned calls f with each lease o holds and when it was handed out, under
// the table's lock: f must not keep l, block, or call the table.
func (t *Table) Owned(o *Owner, f func(l *Lease, handed time.Time)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for seq := range o.sizes {
		if e := t.entries[seq]; e != nil {
			f(&e.Lease, time.UnixMilli(e.handed))
		}
	}
}

// Silent is how long o's caller has not been heard of while o holds
// leases (0 while it holds none, or while it works on one it extended by a
// duration), and how many runs of its leases lapsed unsettled in a row
// since it was last heard of (Owner.lapsed).
func (t *Table) Silent(o *Owner, now time.Time) (silent time.Duration, lapses int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	lapses = o.lapses
	if o.lapsed {
		lapses++
	}
	if len(o.sizes) == 0 {
		return 0, lapses
	}
	return max(now.Sub(time.Unix(0, o.heard)), 0), lapses
}

// Disown lets go of every lease o holds and returns them, live still, but
// for those its caller extended by a duration that has not passed: their
// issuer keeps them alive until then, as it was asked (KeptDue), or they
// last until then (a duration within the lease's deadline). With keep
// set, it keeps each of the others alive until then too, for a caller
// still working on them.
func (t *Table) Disown(o *Owner, keep time.Time) []Lease {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Lease, 0, len(o.sizes))
	now := time.Now().UnixMilli()
	for seq := range o.sizes {
		e := t.entries[seq]
		if e == nil {
			continue
		}
		e.owner = nil
		kept := e.keep > now || e.asked > now
		// An Extend of its caller's in flight takes it back, as one after.
		e.takenBack = e.takenBack || e.state == stateSettling && e.op == OpExtend
		switch {
		case keep.After(e.Deadline) && keep.UnixMilli() > e.keep:
			e.keep = keep.UnixMilli()
			t.keeps[seq] = struct{}{}
		case keep.UnixMilli() > now:
			// Within its deadline: kept alive until then should a shorter
			// wait bring the server's deadline before it (SetTiming).
			e.asked = max(e.asked, keep.UnixMilli())
		}
		if !kept {
			out = append(out, e.Lease)
		}
	}
	clear(o.sizes)
	o.bytes = 0
	return out
}

// lapse records that e left its owner, if any, unsettled at its deadline,
// or at at when a redelivery replaced it (zero: now): a lapse, unless the
// caller was heard of since, or it was handed to the stream over half its
// wait after its receipt. One replaced while a settle of its caller's
// was in flight, or unconfirmed, is the caller heard of instead (a Nak's
// redelivery comes before its answer); the table's lock is held.
func lapse(e *entry, at time.Time) {
	o := e.owner
	if at.IsZero() {
		at = time.Now()
	}
	switch {
	case o == nil:
	case e.state == stateSettling && e.op != OpExtend || e.maybe != 0:
		o.hear(at.UnixNano())
	case min(e.Deadline.UnixNano(), at.UnixNano()) <= o.heard:
		// lapsed before the caller's last word
	case e.handed == 0 || e.Start.IsZero() || 2*(e.handed-e.Start.UnixMilli()) < e.Wait.Milliseconds():
		o.lapsed = true
	} // else handed out over half its wait after its receipt (the rest of
	// another's Fetch, claimed near its end): no sign of the caller
}

// unown takes e from its owner, if any, and wakes the owner; t.mu is held.
func (t *Table) unown(e *entry) {
	o := e.owner
	if o == nil {
		return
	}
	e.owner = nil
	o.bytes -= o.sizes[e.StreamSeq]
	delete(o.sizes, e.StreamSeq)
	select {
	case o.left <- struct{}{}:
	default:
	}
}
