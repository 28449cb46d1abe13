package lease

import (
	"reflect"
	"testing"
	"time"
)

// Holders counts live leases handed out, by principal, most first, with
// the oldest hand-out of each; leases not handed out, past their deadline,
// settled, or replaced by a newer delivery are not counted.
func TestHolders(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	tb := NewTable(time.Minute)
	for seq := uint64(1); seq <= 6; seq++ {
		tb.Add(Lease{StreamSeq: seq, ConsumerSeq: seq, Delivered: 1, Deadline: now.Add(time.Minute), AckSubject: "a"})
	}
	ref := func(seq uint64) Ref { return Ref{StreamSeq: seq, Delivered: 1, ConsumerSeq: seq} }
	tb.Hand([]Ref{ref(1), ref(2)}, "alice", now.Add(-3*time.Second))
	tb.Hand([]Ref{ref(3)}, "alice", now.Add(-time.Second))
	tb.Hand([]Ref{ref(4)}, "bob", now.Add(-2*time.Second))
	tb.Hand([]Ref{ref(5)}, "", now)                             // a gateway without auth
	tb.Hand([]Ref{{StreamSeq: 6, Delivered: 2}}, "carol", now)  // not the delivery held
	tb.Hand([]Ref{{StreamSeq: 99, Delivered: 1}}, "carol", now) // not held at all
	if _, _, err := tb.Begin(ref(2), OpAck, now); err != nil {  // settling: still held
		t.Fatal(err)
	}
	latest := now.Add(time.Minute)
	want := []Holder{
		{Principal: "alice", Leases: 3, Oldest: now.Add(-3 * time.Second), Latest: latest},
		{Principal: "", Leases: 1, Oldest: now, Latest: latest},
		{Principal: "bob", Leases: 1, Oldest: now.Add(-2 * time.Second), Latest: latest},
	}
	if got := tb.Holders(now); !reflect.DeepEqual(got, want) {
		t.Errorf("holders %+v\nwant %+v", got, want)
	}

	tb.Finish(ref(2), OpAck, true, now, Extension{})                                                           // settled
	tb.Add(Lease{StreamSeq: 4, ConsumerSeq: 7, Delivered: 2, Deadline: now.Add(time.Minute), AckSubject: "a"}) // bob's redelivered
	want = []Holder{{Principal: "alice", Leases: 2, Oldest: now.Add(-3 * time.Second), Latest: latest}, {Principal: "", Leases: 1, Oldest: now, Latest: latest}}
	if got := tb.Holders(now); !reflect.DeepEqual(got, want) {
		t.Errorf("after a settle and a redelivery: holders %+v\nwant %+v", got, want)
	}
	if got := tb.Holders(now.Add(2 * time.Minute)); len(got) != 0 {
		t.Errorf("past every deadline: holders %+v, want none", got)
	}
}
