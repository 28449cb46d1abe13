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
	o := NewOwner(0)
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
	other := NewOwner(0)
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

// An Extend by a duration has its owner heard until the time asked, and a
// settle of another of its leases after it does not take that back (it set
// heard to now: the stream went silent while its caller still worked on
// the lease it had extended for an hour).
func TestAnExtendByADurationIsHeardUntilTheTimeAsked(t *testing.T) {
	now := time.Now().Truncate(time.Millisecond)
	p := Policy{AckWait: 30 * time.Second}
	tb := NewTable(time.Minute)
	tb.SetTiming(p)
	o := NewOwner(0)
	var rs []Ref
	for s := uint64(1); s <= 2; s++ {
		l := Lease{StreamSeq: s, ConsumerSeq: s, Delivered: 1, Deadline: p.Deadline(now, 1), Wait: p.AckWait, AckSubject: "a"}
		tb.Add(l)
		rs = append(rs, l.Ref())
	}
	tb.Claim(o, rs, []int64{1, 1}, now)
	if _, _, err := tb.Begin(rs[0], OpExtend, now); err != nil {
		t.Fatal(err)
	}
	tb.Finish(rs[0], OpExtend, true, now, Extension{Deadline: p.Deadline(now, 1), Wait: p.AckWait, Until: now.Add(time.Hour)})
	if s := tb.Silent(o, now.Add(31*time.Second)); s != 0 {
		t.Fatalf("silent %v right after the extend by an hour", s)
	}
	if _, _, err := tb.Begin(rs[1], OpAck, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	tb.Finish(rs[1], OpAck, true, now.Add(time.Second), Extension{})
	if s := tb.Silent(o, now.Add(40*time.Second)); s != 0 {
		t.Errorf("silent %v, 40s into the hour asked for the lease it still holds, after an ack of the other", s)
	}
	if s := tb.Silent(o, now.Add(time.Hour+time.Minute)); s != time.Minute {
		t.Errorf("silent %v a minute past the hour asked; want a minute", s)
	}
}

// Leases that lapsed unsettled are no sign of their stream's caller: the
// first claim after them, while it holds none, starts its silence afresh (a
// caller may leave a message to come back at ack_wait); a later one
// resumes it from where it was when they lapsed, the time it held none
// apart, unless it held none for fresh; a settle of the caller's own
// starts it again.
func TestALapsedLeaseLeavesItsOwnerSilent(t *testing.T) {
	tb := NewTable(time.Minute)
	o := NewOwner(time.Minute)
	add := func(seq, delivered uint64, deadline time.Duration) Ref {
		l := Lease{StreamSeq: seq, ConsumerSeq: 10*delivered + seq, Delivered: delivered, Deadline: at(deadline), AckSubject: subj1}
		tb.Add(l)
		return l.Ref()
	}
	s := time.Second
	silent := func(now time.Duration, want time.Duration, what string) {
		t.Helper()
		if got := tb.Silent(o, at(now)); got != want {
			t.Fatalf("silent %v %s; want %v", got, what, want)
		}
	}
	tb.Claim(o, []Ref{add(1, 1, s), add(2, 1, s)}, []int64{1, 1}, t0)
	tb.Sweep(at(2 * s)) // both lapse: o holds none
	wantLoad(t, tb, o, 0, 0)
	tb.Claim(o, []Ref{add(1, 2, 3*s), add(2, 2, 5*s)}, []int64{1, 1}, at(2*s))
	silent(2*s+s/2, s/2, "half a second into the first claim after its leases lapsed")
	tb.Sweep(at(4 * s)) // 1 lapses at 3s
	silent(4*s, 2*s, "holding one still, 2s after that claim")
	tb.Sweep(at(6 * s)) // 2 lapses at 5s: o holds none
	r3 := add(3, 1, 20*s)
	tb.Claim(o, []Ref{add(1, 3, 20*s), r3}, []int64{1, 1}, at(6*s))
	silent(6*s, 3*s, "as the second claim after lapses comes, 3s held unheard (and 1s holding none)")
	if _, _, err := tb.Begin(r3, OpAck, at(7*s)); err != nil {
		t.Fatal(err)
	}
	tb.Finish(r3, OpAck, true, at(7*s), Extension{})
	silent(8*s, s, "a second after the caller's ack")
	tb.Sweep(at(21 * s)) // 1 lapses at 20s
	tb.Claim(o, []Ref{add(4, 1, 2*time.Minute)}, []int64{1}, at(22*s))
	silent(22*s, 0, "as the first claim after a lapse since the ack comes")
	tb.Sweep(at(2*time.Minute + s)) // 4 lapses
	tb.Claim(o, []Ref{add(5, 1, 4*time.Minute)}, []int64{1}, at(3*time.Minute+s))
	silent(3*time.Minute+2*s, s, "a second into a claim after holding none for fresh (a minute)")
}

// A redelivery that replaces a lease early is a lapse only of the time it
// ran: here the caller's Nak is in flight when the server's redelivery (at
// once, for a Nak) reaches the table, before the Nak's answer, which then
// finds the lease replaced: the Nak is the caller heard of. And one whose
// server redelivered early (its timing shorter than the table knew) lapsed
// when it was replaced, not at its deadline. (A reviewer's tests: silent
// 58s right after the Nak, or the claim.)
func TestALeaseReplacedEarlyLapsesOnlyTheTimeItRan(t *testing.T) {
	for _, nak := range []bool{true, false} {
		tb := NewTable(time.Minute)
		o := NewOwner(time.Minute)
		now := time.Now()
		l0 := Lease{StreamSeq: 7, ConsumerSeq: 7, Delivered: 1, Deadline: now.Add(time.Second), AckSubject: subj1}
		tb.Add(l0)
		tb.Claim(o, []Ref{l0.Ref()}, []int64{1}, now)
		tb.Sweep(now.Add(2 * time.Second)) // a first lapse: the next claim is afresh
		l1 := Lease{StreamSeq: 1, ConsumerSeq: 1, Delivered: 1, Deadline: now.Add(58 * time.Second), AckSubject: subj1}
		tb.Add(l1)
		tb.Claim(o, []Ref{l1.Ref()}, []int64{1}, now.Add(2*time.Second))
		if nak {
			if _, _, err := tb.Begin(l1.Ref(), OpNak, now.Add(3*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		l2 := Lease{StreamSeq: 1, ConsumerSeq: 2, Delivered: 2, Deadline: now.Add(58 * time.Second), AckSubject: subj1, Start: now.Add(3 * time.Second)}
		tb.Add(l2)
		if nak {
			tb.Finish(l1.Ref(), OpNak, true, now.Add(4*time.Second), Extension{})
		}
		tb.Claim(o, []Ref{l2.Ref()}, []int64{1}, now.Add(3*time.Second))
		want := time.Second // the lease replaced ran a second
		if nak {
			want = 0 // heard at the redelivery
		}
		if s := tb.Silent(o, now.Add(3*time.Second)); s != want {
			t.Errorf("nak %v: silent %v as the redelivery is claimed; want %v", nak, s, want)
		}
	}
}
