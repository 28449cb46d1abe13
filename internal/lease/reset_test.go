package lease

import (
	"errors"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/errs"
)

// After a consumer reset the server delivers a message again with its count
// restarted: the table takes that as the reset, voids every lease it held,
// and a token of the earlier delivery names nothing.
func TestAResetDeliveryVoidsEveryLeaseHeldBefore(t *testing.T) {
	now := time.Now()
	tb := NewTable(time.Minute)
	before := Lease{StreamSeq: 5, ConsumerSeq: 5, Delivered: 1, Deadline: now.Add(time.Minute), AckSubject: "old"}
	other := Lease{StreamSeq: 6, ConsumerSeq: 6, Delivered: 1, Deadline: now.Add(time.Minute), AckSubject: "other"}
	if tb.Add(before) == AddedReset || tb.Add(other) == AddedReset {
		t.Fatal("fresh deliveries taken for a reset")
	}
	after := Lease{StreamSeq: 5, ConsumerSeq: 1, Delivered: 1, Deadline: now.Add(time.Minute + time.Second), AckSubject: "new"}
	if tb.Add(after) != AddedReset {
		t.Fatal("a delivery counted as often as the one held is a reset")
	}
	if _, _, err := tb.Begin(Ref{StreamSeq: 6, Delivered: 1, ConsumerSeq: 6, Deadline: other.Deadline}, OpAck, now); !errors.Is(err, errs.ErrLeaseExpired) {
		t.Errorf("another lease from before the reset: %v; want LEASE_EXPIRED", err)
	}
	if _, _, err := tb.Begin(Ref{StreamSeq: 5, Delivered: 1, ConsumerSeq: 5, Deadline: before.Deadline}, OpAck, now); !errors.Is(err, errs.ErrLeaseExpired) {
		t.Errorf("the earlier delivery of the same message: %v; want LEASE_EXPIRED", err)
	}
	subj, _, err := tb.Begin(Ref{StreamSeq: 5, Delivered: 1, ConsumerSeq: 1, Deadline: after.Deadline}, OpAck, now)
	if err != nil || subj != "new" {
		t.Errorf("the delivery after the reset: %q %v; want its own ack subject", subj, err)
	}
}

// Where the consumer sequence restarted to the same number, the deadline
// tells the deliveries apart.
func TestTheDeadlineTellsDeliveriesOfOneSequenceApart(t *testing.T) {
	now := time.Now()
	tb := NewTable(time.Minute)
	first := Lease{StreamSeq: 1, ConsumerSeq: 1, Delivered: 1, Deadline: now.Add(time.Minute), AckSubject: "old"}
	tb.Add(first)
	again := Lease{StreamSeq: 1, ConsumerSeq: 1, Delivered: 1, Deadline: now.Add(time.Minute + 5*time.Millisecond), AckSubject: "new"}
	if tb.Add(again) != AddedReset {
		t.Fatal("not taken for a reset")
	}
	if _, _, err := tb.Begin(Ref{StreamSeq: 1, Delivered: 1, ConsumerSeq: 1, Deadline: first.Deadline}, OpAck, now); !errors.Is(err, errs.ErrLeaseExpired) {
		t.Errorf("a token of the first delivery: %v; want LEASE_EXPIRED", err)
	}
	if !tb.HoldsLater(Ref{StreamSeq: 1, Delivered: 1, ConsumerSeq: 1, Deadline: first.Deadline}, now) {
		t.Error("HoldsLater: the table holds a later delivery than the first's token")
	}
	if tb.HoldsLater(Ref{StreamSeq: 1, Delivered: 1, ConsumerSeq: 1, Deadline: again.Deadline}, now) {
		t.Error("HoldsLater: not later than its own token")
	}
	// An Extend's token carries a later deadline and still names the lease.
	if _, _, err := tb.Begin(Ref{StreamSeq: 1, Delivered: 1, ConsumerSeq: 1, Deadline: again.Deadline.Add(time.Minute)}, OpAck, now); err != nil {
		t.Errorf("an extended token of the current delivery: %v", err)
	}
}

// Where the consumer sequence restarted to the same number and the earlier
// delivery's token was extended past the new one's deadline (or the new
// ack_wait is shorter), the start tells them apart: a token of the new
// delivery started at its receipt or later.
func TestTheStartTellsDeliveriesOfOneSequenceApart(t *testing.T) {
	now := time.Now()
	tb := NewTable(time.Minute)
	first := Lease{StreamSeq: 1, ConsumerSeq: 1, Delivered: 1, Start: now.Add(-time.Second), Deadline: now.Add(time.Minute), AckSubject: "old"}
	tb.Add(first)
	again := Lease{StreamSeq: 1, ConsumerSeq: 1, Delivered: 1, Start: now, Deadline: now.Add(2 * time.Second), AckSubject: "new"}
	if tb.Add(again) != AddedReset {
		t.Fatal("not taken for a reset")
	}
	extended := Ref{StreamSeq: 1, Delivered: 1, ConsumerSeq: 1, Start: now.Add(-500 * time.Millisecond), Deadline: now.Add(10 * time.Minute)}
	if _, _, err := tb.Begin(extended, OpAck, now); !errors.Is(err, errs.ErrLeaseExpired) {
		t.Errorf("an extended token of the first delivery: %v; want LEASE_EXPIRED", err)
	}
	if !tb.HoldsLater(extended, now) {
		t.Error("HoldsLater: the table holds a later delivery than the first's extended token")
	}
	own := Ref{StreamSeq: 1, Delivered: 1, ConsumerSeq: 1, Start: now.Add(time.Second), Deadline: now.Add(time.Minute)}
	if tb.HoldsLater(own, now) {
		t.Error("HoldsLater: not later than its own extended token")
	}
	if _, _, err := tb.Begin(own, OpAck, now); err != nil {
		t.Errorf("an extended token of the current delivery: %v", err)
	}
}

// A copy of an older delivery that comes late (a canceled Fetch's pull,
// drained after the redelivery came), its deadline past, is no reset.
func TestALateCopyOfAnOlderDeliveryIsNoReset(t *testing.T) {
	now := time.Now()
	tb := NewTable(time.Minute)
	tb.Add(Lease{StreamSeq: 1, ConsumerSeq: 2, Delivered: 2, Deadline: now.Add(time.Minute), AckSubject: "second"})
	if tb.Add(Lease{StreamSeq: 1, ConsumerSeq: 1, Delivered: 1, Deadline: now.Add(-time.Second), AckSubject: "first"}) == AddedReset {
		t.Fatal("a late copy of an older delivery taken for a reset")
	}
	if subj, _, err := tb.Begin(Ref{StreamSeq: 1, Delivered: 2}, OpAck, now); err != nil || subj != "second" {
		t.Fatalf("the newer delivery: %q %v", subj, err)
	}
}
