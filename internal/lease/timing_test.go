package lease

import (
	"testing"
	"time"
)

// A lease extended with a duration past its deadline is kept: KeptDue
// offers it once its deadline is near, a keep-alive's +WPI keeps the keep,
// and the last one stops at the deadline asked for. A plain Extend ends the
// keep-alive.
func TestAKeptLeaseIsDueUntilItsKeep(t *testing.T) {
	now := time.Now().Truncate(time.Millisecond)
	p := Policy{AckWait: 3 * time.Second}
	tb := NewTable(time.Minute)
	tb.SetTiming(p)
	l := Lease{StreamSeq: 1, ConsumerSeq: 1, Delivered: 1, Deadline: p.Deadline(now, 1), Wait: 3 * time.Second, AckSubject: "a"}
	tb.Add(l)
	lead := func(uint64) time.Duration { return time.Second }
	extend := func(at time.Time, ext Extension) (time.Time, time.Time) {
		t.Helper()
		if _, _, err := tb.Begin(l.Ref(), OpExtend, at); err != nil {
			t.Fatal(err)
		}
		ext.Deadline, ext.Wait = p.Deadline(at, 1), p.AckWaitFor(1)
		return tb.Finish(l.Ref(), OpExtend, true, at, ext)
	}
	until := now.Add(7 * time.Second)
	if dl, kept := extend(now, Extension{Until: until}); !kept.Equal(until) || !dl.Equal(p.Deadline(now, 1)) {
		t.Fatalf("extend until +7s: deadline %v, kept %v", dl, kept)
	}
	if due := tb.KeptDue(now, lead); len(due) != 0 {
		t.Fatalf("due at once: %v", due)
	}
	at := p.Deadline(now, 1).Add(-500 * time.Millisecond)
	if due := tb.KeptDue(at, lead); len(due) != 1 {
		t.Fatalf("due near the deadline: %d; want 1", len(due))
	}
	if dl, kept := extend(at, Extension{KeepAlive: true}); !kept.Equal(until) || !dl.Equal(p.Deadline(at, 1)) {
		t.Fatalf("keep-alive: deadline %v, kept %v", dl, kept)
	}
	at = p.Deadline(at, 1).Add(-500 * time.Millisecond) // past until - the wait: the last +WPI
	if dl, asked := extend(at, Extension{KeepAlive: true}); !asked.Equal(until) || !dl.After(until) {
		t.Fatalf("last keep-alive: server's deadline %v, asked %v; want the server's past the one asked for", dl, asked)
	}
	if _, _, err := tb.Begin(l.Ref(), OpAck, until); err == nil {
		t.Fatal("the lease is live at the deadline asked for")
	}
	if due := tb.KeptDue(until.Add(-100*time.Millisecond), lead); len(due) != 0 {
		t.Fatalf("due after the last keep-alive: %v", due)
	}

	extend(now, Extension{Until: until})
	if _, kept := extend(now, Extension{}); !kept.IsZero() || len(tb.keeps) != 1 {
		t.Fatalf("a plain Extend after a keep: kept %v", kept)
	}
	if due := tb.KeptDue(p.Deadline(now, 1).Add(-500*time.Millisecond), lead); len(due) != 0 || len(tb.keeps) != 0 {
		t.Fatalf("a plain Extend left the keep-alive on: %v", due)
	}
}

// A server that restores its record of the deliveries dates each to the
// second, and no earlier a second time: Shorten cuts a lease once, however
// often it is told, and again only once the lease was extended (the
// server dates an extended delivery anew).
func TestShortenCutsALeaseOnceUntilItIsExtended(t *testing.T) {
	tb := NewTable(time.Minute)
	tb.Add(leaseOf(dlv1, subj1))
	deadline := func() time.Time { return tb.entries[seq].Deadline }
	if n := tb.Shorten(); n != 1 || !deadline().Equal(dlv1.Deadline.Add(-RestorePrecision)) {
		t.Fatalf("first Shorten: %d cut, deadline %v; want 1, a second sooner", n, deadline())
	}
	if n := tb.Shorten(); n != 0 || !deadline().Equal(dlv1.Deadline.Add(-RestorePrecision)) {
		t.Fatalf("second Shorten: %d cut, deadline %v; want none, the deadline left", n, deadline())
	}
	if _, _, err := tb.Begin(dlv1.Ref(), OpExtend, at(time.Second)); err != nil {
		t.Fatal(err)
	}
	extended := at(31 * time.Second)
	tb.Finish(dlv1.Ref(), OpExtend, true, at(time.Second), Extension{Deadline: extended})
	if n := tb.Shorten(); n != 1 || !deadline().Equal(extended.Add(-RestorePrecision)) {
		t.Fatalf("Shorten after an extend: %d cut, deadline %v; want 1, a second before the extended deadline", n, deadline())
	}
}

// A token that carries the delivery's first deadline does not undo a cut
// when its lease is adopted again; an Extend in flight as the leases are
// cut ends cut too (the server may date it to the second).
func TestACutLeaseStaysCutByAdoptAndByAnExtendInFlight(t *testing.T) {
	tb := NewTable(time.Minute)
	tb.Add(leaseOf(dlv1, subj1))
	tb.Shorten()
	cut := dlv1.Deadline.Add(-RestorePrecision)
	tb.Adopt(leaseOf(dlv1, subj1)) // its first token again
	if got := tb.entries[seq].Deadline; !got.Equal(cut) {
		t.Fatalf("adopted from its first token: deadline %v; want it left cut at %v", got, cut)
	}
	if _, _, err := tb.Begin(dlv1.Ref(), OpExtend, at(time.Second)); err != nil {
		t.Fatal(err)
	}
	tb.Shorten() // while the Extend is in flight
	extended := at(31 * time.Second)
	if got, _ := tb.Finish(dlv1.Ref(), OpExtend, true, at(time.Second), Extension{Deadline: extended}); !got.Equal(extended.Add(-RestorePrecision)) {
		t.Fatalf("an Extend in flight as the leases were cut ends at %v; want %v, a second sooner", got, extended.Add(-RestorePrecision))
	}
	if n := tb.Shorten(); n != 0 {
		t.Fatalf("a lease cut as its Extend ended is cut again (%d)", n)
	}
}

// A shorter wait re-dates a lease from when the server's clock of it last
// started (its receipt or its last +WPI, a second sooner once cut), not
// from its deadline, which an Extend's duration may have cut. Where the
// server now redelivers before the deadline its caller asked for, the lease
// is kept alive until then (DESIGN 17).
func TestAShorterWaitReDatesALeaseFromTheServersClock(t *testing.T) {
	s := time.Second
	long, short := Policy{AckWait: 30 * s, Early: s}, Policy{AckWait: 10 * s, Early: s}
	received := t0
	sent := received.Add(2 * s)
	cases := []struct {
		name     string
		extend   bool
		asked    time.Duration // the Extend's duration; 0: one wait
		shorten  bool
		deadline time.Time // once the wait is cut to short's
		keep     time.Time // zero: not kept alive
	}{
		{name: "received", deadline: short.Deadline(received, 1)},
		{name: "received, cut", shorten: true, deadline: short.Deadline(received.Add(-s), 1)},
		{name: "extended", extend: true, deadline: short.Deadline(sent, 1)},
		{name: "extended, cut", extend: true, shorten: true, deadline: short.Deadline(sent.Add(-s), 1)},
		{name: "extended by less than the new wait", extend: true, asked: 5 * s, deadline: sent.Add(5 * s)},
		{name: "extended by more than the new wait", extend: true, asked: 12 * s, deadline: short.Deadline(sent, 1), keep: sent.Add(12 * s)},
		{name: "extended by more than the new wait, cut", extend: true, asked: 12 * s, shorten: true, deadline: short.Deadline(sent.Add(-s), 1), keep: sent.Add(12 * s)},
		{name: "extended by more than the old wait", extend: true, asked: 40 * s, deadline: short.Deadline(sent, 1), keep: sent.Add(40 * s)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb := NewTable(time.Minute)
			tb.SetTiming(long)
			l := Lease{StreamSeq: seq, ConsumerSeq: 77, Delivered: 1, Deadline: long.Deadline(received, 1), Start: received, Wait: 30 * s, AckSubject: subj1}
			tb.Add(l)
			if c.extend {
				if _, _, err := tb.Begin(l.Ref(), OpExtend, sent); err != nil {
					t.Fatal(err)
				}
				ext := Extension{Deadline: long.Deadline(sent, 1), Wait: 30 * s, Sent: sent}
				if c.asked != 0 {
					ext.Until = sent.Add(c.asked)
				}
				tb.Finish(l.Ref(), OpExtend, true, sent, ext)
			}
			if c.shorten {
				tb.Shorten()
			}
			tb.SetTiming(short)
			e := tb.entries[seq]
			if !e.Deadline.Equal(c.deadline) {
				t.Errorf("deadline %v after the received lease; want %v", e.Deadline.Sub(received), c.deadline.Sub(received))
			}
			var keep time.Time
			if e.keep != 0 {
				keep = time.UnixMilli(e.keep)
			}
			if !keep.Equal(c.keep) {
				t.Errorf("kept alive until %v; want %v (zero: not kept)", keep, c.keep)
			}
			due := tb.KeptDue(c.deadline.Add(-100*time.Millisecond), func(uint64) time.Duration { return s })
			if kept := len(due) == 1; kept == c.keep.IsZero() {
				t.Errorf("due to be kept alive near its deadline: %v; want %v", kept, !c.keep.IsZero())
			}
		})
	}
}

// A keep-alive's last +WPI cuts the lease to the deadline asked for, which
// a later cut of the wait keeps alive again.
func TestAKeepAlivesLastExtendKeepsTheDeadlineAskedThroughACut(t *testing.T) {
	s := time.Second
	long, short, shorter := Policy{AckWait: 30 * s}, Policy{AckWait: 3 * s}, Policy{AckWait: s}
	tb := NewTable(time.Minute)
	tb.SetTiming(long)
	l := Lease{StreamSeq: seq, ConsumerSeq: 77, Delivered: 1, Deadline: long.Deadline(t0, 1), Start: t0, Wait: 30 * s, AckSubject: subj1}
	tb.Add(l)
	extend := func(at time.Time, p Policy, ext Extension) time.Time {
		t.Helper()
		if _, _, err := tb.Begin(l.Ref(), OpExtend, at); err != nil {
			t.Fatal(err)
		}
		ext.Deadline, ext.Wait, ext.Sent = p.Deadline(at, 1), p.AckWaitFor(1), at
		dl, _ := tb.Finish(l.Ref(), OpExtend, true, at, ext)
		return dl
	}
	asked := t0.Add(5 * s)
	extend(t0, long, Extension{Until: asked})
	tb.SetTiming(short) // the server's deadline before the one asked: kept alive
	lead := func(uint64) time.Duration { return s }
	at := t0.Add(2500 * time.Millisecond)
	if due := tb.KeptDue(at, lead); len(due) != 1 {
		t.Fatalf("due after the cut: %d; want 1", len(due))
	}
	if server := extend(at, short, Extension{KeepAlive: true}); !server.After(asked) || !tb.entries[seq].Deadline.Equal(asked) {
		t.Fatalf("the last keep-alive: server's deadline %v, lease's %v; want the lease's at the one asked, %v", server, tb.entries[seq].Deadline, asked)
	}
	tb.SetTiming(shorter) // the server's deadline before the one asked again
	if d := tb.entries[seq].Deadline; !d.Equal(shorter.Deadline(at, 1)) {
		t.Fatalf("deadline after the second cut %v; want %v", d, shorter.Deadline(at, 1))
	}
	if due := tb.KeptDue(shorter.Deadline(at, 1).Add(-100*time.Millisecond), lead); len(due) != 1 {
		t.Fatalf("due after the second cut: %d; want 1", len(due))
	}
}

// A stream ended with its leases kept for its caller (Disown's keep) whose
// keep falls within a lease's deadline is kept alive until then all the
// same when a shorter wait brings the server's deadline before it.
func TestADisownedLeaseKeepsItsKeepThroughAShorterWait(t *testing.T) {
	s := time.Second
	long, short := Policy{AckWait: 30 * s, Early: s}, Policy{AckWait: 5 * s, Early: s}
	received := time.Now()
	tb := NewTable(time.Minute)
	tb.SetTiming(long)
	l := Lease{StreamSeq: seq, ConsumerSeq: 77, Delivered: 1, Deadline: long.Deadline(received, 1), Start: received, Wait: 30 * s, AckSubject: subj1}
	tb.Add(l)
	o := NewOwner()
	tb.Claim(o, []Ref{l.Ref()}, []int64{10}, received)
	keep := received.Add(20 * s) // before the lease's deadline of 30s, less its margin
	tb.Disown(o, keep)
	tb.SetTiming(short)
	e := tb.entries[seq]
	if !e.Deadline.Equal(short.Deadline(received, 1)) {
		t.Errorf("deadline %v after receipt; want the shorter wait's %v", e.Deadline.Sub(received), short.Deadline(received, 1).Sub(received))
	}
	if e.keep != keep.UnixMilli() {
		t.Errorf("kept alive until %v after receipt; want the stream's keep, %v", time.UnixMilli(e.keep).Sub(received), keep.Sub(received))
	}
}
