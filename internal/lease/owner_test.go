package lease

import (
	"testing"
	"time"
)

// ownedTable holds three leases (stream sequences 1–3, 10 bytes each) of
// one owner, handed out at t0.
func ownedTable(t *testing.T) (*Table, *Owner, []Ref) {
	t.Helper()
	tb := NewTable(retention)
	o := NewOwner()
	var rs []Ref
	for s := uint64(1); s <= 3; s++ {
		l := Lease{StreamSeq: s, ConsumerSeq: s, Delivered: 1, Deadline: at(leaseTTL), AckSubject: subj1}
		tb.Add(l)
		rs = append(rs, l.Ref())
	}
	tb.Hand(rs, "alice", t0)
	tb.Claim(o, rs, []int64{10, 10, 10}, t0)
	wantLoad(t, tb, o, 3, 30)
	return tb, o, rs
}

func wantLoad(t *testing.T, tb *Table, o *Owner, n int, bytes int64) {
	t.Helper()
	if gotN, gotBytes := tb.Load(o); gotN != n || gotBytes != bytes {
		t.Fatalf("owner holds %d leases of %d bytes, want %d of %d", gotN, gotBytes, n, bytes)
	}
}

// wantLeft reports whether the owner was told a lease left.
func wantLeft(t *testing.T, o *Owner, want bool) {
	t.Helper()
	select {
	case <-o.Left():
		if !want {
			t.Fatal("the owner was told a lease left; none did")
		}
	default:
		if want {
			t.Fatal("the owner was not told a lease left")
		}
	}
}

// Every way a lease leaves the table gives its room back to the stream
// holding it, and tells the stream: a settle, an expiry, a newer delivery
// of its message, a reset.
func TestAnOwnedLeaseLeavesItsOwnerWithTheTable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		leave func(tb *Table, rs []Ref)
		n     int
	}{
		{"settled", func(tb *Table, rs []Ref) {
			if _, _, err := tb.Begin(rs[0], OpAck, at(time.Second)); err != nil {
				t.Fatal(err)
			}
			tb.Finish(rs[0], OpAck, true, at(time.Second), Extension{})
		}, 2},
		{"expired", func(tb *Table, rs []Ref) { tb.Sweep(at(leaseTTL + time.Second)) }, 0},
		{"replaced by a newer delivery", func(tb *Table, rs []Ref) {
			tb.Add(Lease{StreamSeq: 2, ConsumerSeq: 9, Delivered: 2, Deadline: at(2 * leaseTTL)})
		}, 2},
		{"voided", func(tb *Table, rs []Ref) { tb.Void() }, 0},
		{"voided by a reset the table saw", func(tb *Table, rs []Ref) {
			tb.Add(Lease{StreamSeq: 3, ConsumerSeq: 1, Delivered: 1, Deadline: time.Now().Add(time.Minute)})
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, o, rs := ownedTable(t)
			tc.leave(tb, rs)
			wantLoad(t, tb, o, tc.n, int64(10*tc.n))
			wantLeft(t, o, true)
		})
	}
}

// A failed settle, an Extend and an unconfirmed settle leave the lease
// where it is; the owner sees an Extend's deadline, which the table alone
// keeps.
func TestAnOwnedLeaseStaysThroughExtendsAndFailures(t *testing.T) {
	tb, o, rs := ownedTable(t)
	for _, op := range []Op{OpAck, OpExtend} {
		if _, _, err := tb.Begin(rs[0], op, at(time.Second)); err != nil {
			t.Fatal(err)
		}
		tb.Finish(rs[0], op, op == OpExtend, at(time.Second), Extension{Deadline: at(time.Minute)})
	}
	if _, _, err := tb.Begin(rs[1], OpNak, at(time.Second)); err != nil {
		t.Fatal(err)
	}
	tb.Unsure(rs[1], OpNak)
	wantLoad(t, tb, o, 3, 30)
	wantLeft(t, o, false)
	deadlines := map[uint64]time.Time{}
	tb.Owned(o, func(l *Lease, handed time.Time) {
		if !handed.Equal(t0) {
			t.Errorf("lease %d handed out at %v, want %v", l.StreamSeq, handed, t0)
		}
		deadlines[l.StreamSeq] = l.Deadline
	})
	if !deadlines[1].Equal(at(time.Minute)) || !deadlines[2].Equal(at(leaseTTL)) || len(deadlines) != 3 {
		t.Fatalf("owned deadlines %v; want the Extend's on 1, the first on 2 and 3", deadlines)
	}
}

// Disown hands the owner's live leases back, still live in the table (to
// be nak'ed), and the owner holds none; a lease claimed by a second owner
// leaves the first; one the table no longer holds is not claimed.
func TestDisownAndClaimMoveLeasesBetweenOwners(t *testing.T) {
	tb, o, rs := ownedTable(t)
	other := NewOwner()
	tb.Claim(other, rs[2:], []int64{7}, t0)
	wantLoad(t, tb, o, 2, 20)
	wantLoad(t, tb, other, 1, 7)
	wantLeft(t, o, true)
	tb.Claim(other, []Ref{{StreamSeq: 99, Delivered: 1}}, []int64{5}, t0)
	wantLoad(t, tb, other, 1, 7)
	ls := tb.Disown(o, time.Time{})
	if len(ls) != 2 || tb.Live() != 3 {
		t.Fatalf("disowned %v with %d live; want 2 leases, 3 live", ls, tb.Live())
	}
	wantLoad(t, tb, o, 0, 0)
	tb.Void()
	wantLoad(t, tb, other, 0, 0)
}

// extendedTable is a table of n leases (ack_wait 30s) that one owner claimed
// at now, and its caller's Extend by a duration (to now+until) and Ack.
type extendedTable struct {
	t   *testing.T
	tb  *Table
	o   *Owner
	rs  []Ref
	p   Policy
	now time.Time
}

func newExtendedTable(t *testing.T, n int) *extendedTable {
	x := &extendedTable{t: t, tb: NewTable(time.Minute), o: NewOwner(), p: Policy{AckWait: 30 * time.Second}, now: time.Now().Truncate(time.Millisecond)}
	x.tb.SetTiming(x.p)
	for s := uint64(1); s <= uint64(n); s++ {
		l := Lease{StreamSeq: s, ConsumerSeq: s, Delivered: 1, Deadline: x.p.Deadline(x.now, 1), Wait: x.p.AckWait, AckSubject: "a"}
		x.tb.Add(l)
		x.rs = append(x.rs, l.Ref())
	}
	x.tb.Claim(x.o, x.rs, make([]int64, n), x.now)
	return x
}

func (x *extendedTable) extend(i int, until time.Duration) {
	x.t.Helper()
	if _, _, err := x.tb.Begin(x.rs[i], OpExtend, x.now); err != nil {
		x.t.Fatal(err)
	}
	x.tb.Finish(x.rs[i], OpExtend, true, x.now, Extension{Deadline: x.p.Deadline(x.now, 1), Wait: x.p.AckWait, Until: x.now.Add(until)})
}

func (x *extendedTable) ack(i int, after time.Duration) {
	x.t.Helper()
	if _, _, err := x.tb.Begin(x.rs[i], OpAck, x.now.Add(after)); err != nil {
		x.t.Fatal(err)
	}
	x.tb.Finish(x.rs[i], OpAck, true, x.now.Add(after), Extension{})
}

func (x *extendedTable) silent(after time.Duration) time.Duration {
	s, _ := x.tb.Silent(x.o, x.now.Add(after))
	return s
}

// An Extend by a duration has its owner heard until the time asked, and a
// settle of another of its leases after it does not take that back (it set
// heard to now: the stream went silent while its caller still worked on
// the lease it had extended for an hour).
func TestAnExtendByADurationIsHeardUntilTheTimeAsked(t *testing.T) {
	x := newExtendedTable(t, 2)
	x.extend(0, time.Hour)
	if s := x.silent(31 * time.Second); s != 0 {
		t.Fatalf("silent %v right after the extend by an hour", s)
	}
	x.ack(1, time.Second)
	if s := x.silent(40 * time.Second); s != 0 {
		t.Errorf("silent %v, 40s into the hour asked for the lease it still holds, after an ack of the other", s)
	}
	if s := x.silent(time.Hour + time.Minute); s != time.Minute {
		t.Errorf("silent %v a minute past the hour asked; want a minute", s)
	}
}

// Leases that lapsed unsettled are no sign of their stream's caller: the
// claim after them, while it holds none, starts its silence afresh (a
// caller may leave a message to come back at ack_wait), but a second run of
// lapses with no word from the caller between is the caller gone; a lapse
// before the caller's last word, or while its Nak is in flight (the Nak's
// redelivery comes before its answer), is none.
func TestALapsedLeaseLeavesItsOwnerSilent(t *testing.T) {
	tb := NewTable(time.Minute)
	o := NewOwner()
	add := func(seq, delivered uint64, deadline time.Duration) Ref {
		l := Lease{StreamSeq: seq, ConsumerSeq: 10*delivered + seq, Delivered: delivered, Deadline: at(deadline), AckSubject: subj1}
		tb.Add(l)
		return l.Ref()
	}
	s := time.Second
	silent := func(now time.Duration, wantSilent time.Duration, wantLapses int, what string) {
		t.Helper()
		if got, lapses := tb.Silent(o, at(now)); got != wantSilent || lapses != wantLapses {
			t.Fatalf("silent %v after %d runs of lapses %s; want %v after %d", got, lapses, what, wantSilent, wantLapses)
		}
	}
	tb.Claim(o, []Ref{add(1, 1, s), add(2, 1, s)}, []int64{1, 1}, t0)
	tb.Sweep(at(2 * s)) // both lapse: o holds none
	silent(2*s, 0, 1, "as both leases lapsed")
	r2 := add(2, 2, 5*s)
	tb.Claim(o, []Ref{add(1, 2, 3*s), r2}, []int64{1, 1}, at(2*s))
	silent(2*s+s/2, s/2, 1, "half a second into the claim after them")
	if _, _, err := tb.Begin(r2, OpAck, at(3*s)); err != nil {
		t.Fatal(err)
	}
	tb.Finish(r2, OpAck, true, at(3*s), Extension{})
	silent(3*s, 0, 0, "as the caller acks")
	tb.Sweep(at(4 * s)) // 1 lapses at 3s: as the ack came, not after it
	silent(4*s, 0, 0, "a lease lapsed as the caller was heard of")
	r1 := add(1, 3, 10*s)
	tb.Claim(o, []Ref{r1}, []int64{1}, at(4*s))
	if _, _, err := tb.Begin(r1, OpNak, at(5*s)); err != nil {
		t.Fatal(err)
	}
	tb.Add(Lease{StreamSeq: 1, ConsumerSeq: 41, Delivered: 4, Deadline: at(20 * s), AckSubject: subj1, Start: at(5 * s)}) // the Nak's redelivery, before its answer
	silent(5*s, 0, 0, "as a Nak's redelivery replaced the lease")
	tb.Claim(o, []Ref{add(3, 1, 6*s)}, []int64{1}, at(5*s))
	tb.Sweep(at(7 * s))
	tb.Claim(o, []Ref{add(3, 2, 8*s)}, []int64{1}, at(7*s))
	tb.Sweep(at(9 * s))
	silent(9*s, 0, 2, "as two runs lapsed in a row")
}

// A redelivery that replaces a lease early (its server's timing shorter than
// the table knew) is a lapse all the same: the caller let it go.
func TestALeaseReplacedEarlyIsALapse(t *testing.T) {
	tb := NewTable(time.Minute)
	o := NewOwner()
	now := time.Now()
	l1 := Lease{StreamSeq: 1, ConsumerSeq: 1, Delivered: 1, Deadline: now.Add(58 * time.Second), Wait: time.Minute, AckSubject: subj1, Start: now}
	tb.Add(l1)
	tb.Hand([]Ref{l1.Ref()}, "alice", now) // handed at its receipt, as a Consume's are
	tb.Claim(o, []Ref{l1.Ref()}, []int64{1}, now)
	tb.Add(Lease{StreamSeq: 1, ConsumerSeq: 2, Delivered: 2, Deadline: now.Add(58 * time.Second), AckSubject: subj1, Start: now.Add(time.Second)})
	if _, lapses := tb.Silent(o, now.Add(time.Second)); lapses != 1 {
		t.Errorf("%d runs of lapses after a lease was replaced a second in; want 1", lapses)
	}
}

// A settle of the lease its caller extended by a duration ends the time it
// asked for: the caller is heard of then, not until the time asked; but not
// while it still holds another lease so extended.
func TestASettleEndsTheTimeAnExtendAsked(t *testing.T) {
	x := newExtendedTable(t, 3)
	x.extend(0, time.Hour)
	x.extend(1, 2*time.Hour)
	x.ack(0, time.Second)
	if s := x.silent(time.Minute); s != 0 {
		t.Fatalf("silent %v a minute after the ack of one, still holding one extended by 2h", s)
	}
	x.ack(1, 2*time.Second)
	if s := x.silent(12 * time.Second); s != 10*time.Second {
		t.Errorf("silent %v 10s after the ack of the last lease extended by a duration; want 10s", s)
	}
}

// A lease handed to the stream over half its wait after its receipt (the
// rest of another's Fetch, claimed near its end) that lapses is no run of
// lapses.
func TestALeaseHeldBrieflyIsNoLapse(t *testing.T) {
	tb := NewTable(time.Minute)
	o := NewOwner()
	l := Lease{StreamSeq: 1, ConsumerSeq: 1, Delivered: 1, Deadline: at(10 * time.Second), Wait: 10 * time.Second, AckSubject: subj1, Start: t0}
	tb.Add(l)
	tb.Hand([]Ref{l.Ref()}, "alice", at(7*time.Second))
	tb.Claim(o, []Ref{l.Ref()}, []int64{1}, at(7*time.Second))
	tb.Sweep(at(11 * time.Second))
	if _, lapses := tb.Silent(o, at(11*time.Second)); lapses != 0 {
		t.Fatalf("%d runs of lapses after a lease held 3s of its 10s wait lapsed; want 0", lapses)
	}
}
