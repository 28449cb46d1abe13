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

// An Extend by a duration has its owner heard until the time asked, and a
// settle of another of its leases after it does not take that back (it set
// heard to now: the stream went silent while its caller still worked on
// the lease it had extended for an hour).
func TestAnExtendByADurationIsHeardUntilTheTimeAsked(t *testing.T) {
	now := time.Now().Truncate(time.Millisecond)
	p := Policy{AckWait: 30 * time.Second}
	tb := NewTable(time.Minute)
	tb.SetTiming(p)
	o := NewOwner()
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

// Leases that lapsed unsettled, swept at their deadline or replaced by a
// redelivery, are no sign of their stream's caller: a claim after them
// leaves its silence going on from where it was when they lapsed (the time
// it held none apart); a settle of the caller's own starts it again.
func TestALapsedLeaseLeavesItsOwnerSilent(t *testing.T) {
	tb := NewTable(time.Minute)
	o := NewOwner()
	add := func(seq, delivered uint64, deadline time.Time) Ref {
		l := Lease{StreamSeq: seq, ConsumerSeq: 10*delivered + seq, Delivered: delivered, Deadline: deadline, AckSubject: subj1}
		tb.Add(l)
		return l.Ref()
	}
	r1, r2 := add(1, 1, at(time.Second)), add(2, 1, at(time.Second))
	tb.Claim(o, []Ref{r1, r2}, []int64{1, 1}, t0)
	tb.Sweep(at(2 * time.Second)) // both lapse: o holds none
	wantLoad(t, tb, o, 0, 0)
	tb.Claim(o, []Ref{add(1, 2, at(3*time.Second))}, []int64{1}, at(2*time.Second))
	r2 = add(2, 2, at(5*time.Second))
	tb.Claim(o, []Ref{r2}, []int64{1}, at(2*time.Second))
	tb.Claim(o, []Ref{add(1, 3, at(4*time.Second))}, []int64{1}, at(3*time.Second)) // the redelivery of a lapsed one
	if s := tb.Silent(o, at(3*time.Second)); s != 2*time.Second {
		t.Fatalf("silent %v after its leases lapsed and came back twice, 3s after the first claim, 1s of it holding none; want 2s", s)
	}
	if _, _, err := tb.Begin(r2, OpAck, at(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	tb.Finish(r2, OpAck, true, at(3*time.Second), Extension{})
	if s := tb.Silent(o, at(4*time.Second)); s != time.Second {
		t.Errorf("silent %v a second after the caller's ack; want 1s", s)
	}
}
