package lease

import (
	"testing"
	"time"
)

func TestMargin(t *testing.T) {
	tests := []struct{ ackWait, want time.Duration }{
		{200 * time.Millisecond, 100 * time.Millisecond}, // half the wait
		{time.Second, MinMargin},
		{2 * time.Second, MinMargin},
		{3 * time.Second, 300 * time.Millisecond},
		{5 * time.Second, 500 * time.Millisecond},
		{20 * time.Second, 2 * time.Second},
		{30 * time.Second, MaxMargin}, // capped
		{time.Hour, MaxMargin},
	}
	for _, tt := range tests {
		if got := Margin(tt.ackWait); got != tt.want {
			t.Errorf("Margin(%v) = %v, want %v", tt.ackWait, got, tt.want)
		}
		if Margin(tt.ackWait) <= 0 {
			t.Errorf("Margin(%v) is not positive: a lease would outlive the server's redelivery", tt.ackWait)
		}
	}
}

func TestDeadlineEndsAMarginBeforeRedelivery(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 678_901_234, time.UTC)
	p := Policy{AckWait: 30 * time.Second}
	got := p.Deadline(start, 1)
	redelivery := start.Add(30 * time.Second)
	if want := redelivery.Add(-2 * time.Second).Truncate(time.Millisecond); !got.Equal(want) {
		t.Fatalf("Deadline = %v, want %v (ack_wait minus the 2s margin, to the millisecond)", got, want)
	}
	if !got.Before(redelivery) {
		t.Fatalf("Deadline %v is not before the redelivery at %v", got, redelivery)
	}
	if got.Nanosecond()%int(time.Millisecond) != 0 {
		t.Fatalf("Deadline %v is not cut to the millisecond, as tokens carry it", got)
	}
}

// A server that may redeliver a second sooner unheard (Early) ends the
// lease that much sooner; a short wait keeps half of what its margin
// leaves.
func TestDeadlineEndsEarlyWhereTheServerMayRedeliverSooner(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	plain := Policy{AckWait: 5 * time.Second}
	early := Policy{AckWait: 5 * time.Second, Early: RestorePrecision}
	if got, want := early.Deadline(start, 1), plain.Deadline(start, 1).Add(-RestorePrecision); !got.Equal(want) {
		t.Fatalf("Deadline with Early = %v, want %v: a second before the plain one", got, want)
	}
	if plain.Equal(early) {
		t.Fatal("two policies a second apart are Equal")
	}
	// A short wait keeps half of what its margin leaves.
	brief := Policy{AckWait: time.Second, Early: RestorePrecision}
	if got, want := brief.Deadline(start, 1), start.Add(375*time.Millisecond); !got.Equal(want) {
		t.Fatalf("Deadline of a 1s wait with Early = %v, want %v: half of the 750ms its margin leaves", got, want)
	}
}

func TestDeadlineFollowsBackOff(t *testing.T) {
	p := Policy{AckWait: time.Minute, BackOff: []time.Duration{time.Second, 10 * time.Second, 5 * time.Minute}}
	tests := []struct {
		delivered uint64
		wait      time.Duration
	}{
		{0, time.Minute}, // not a delivery count the server sends; ack_wait
		{1, time.Second},
		{2, 10 * time.Second},
		{3, 5 * time.Minute},
		{9, 5 * time.Minute}, // past the last step, the last step
	}
	start := time.Unix(1000, 0)
	for _, tt := range tests {
		if got := p.AckWaitFor(tt.delivered); got != tt.wait {
			t.Errorf("AckWaitFor(%d) = %v, want %v", tt.delivered, got, tt.wait)
		}
		if got, want := p.Deadline(start, tt.delivered), start.Add(tt.wait-Margin(tt.wait)); !got.Equal(want) {
			t.Errorf("Deadline(delivered %d) = %v, want %v", tt.delivered, got, want)
		}
	}
}

// A lease dated by a longer wait than the table's timing is re-dated from
// the same start when the timing changes, and as it is recorded; one dated
// by a shorter wait keeps its deadline, which the server honours.
func TestSetTimingRedatesOnlyWhatTheServerWillNotHonour(t *testing.T) {
	start := time.Now().Truncate(time.Millisecond)
	long := Policy{AckWait: 30 * time.Second}
	short := Policy{AckWait: 2 * time.Second}
	tb := NewTable(time.Minute)
	tb.SetTiming(long)
	tb.Add(Lease{StreamSeq: 1, ConsumerSeq: 1, Delivered: 1, Deadline: long.Deadline(start, 1), Wait: 30 * time.Second, AckSubject: "a"})
	tb.Add(Lease{StreamSeq: 2, ConsumerSeq: 2, Delivered: 1, Deadline: short.Deadline(start, 1), Wait: 2 * time.Second, AckSubject: "b"})
	if moved := tb.SetTiming(short); moved != 1 {
		t.Fatalf("moved %d leases; want 1, the one dated by 30s", moved)
	}
	late := start.Add(2 * time.Second)
	if _, _, err := tb.Begin(Ref{StreamSeq: 1, Delivered: 1}, OpAck, late); err == nil {
		t.Fatal("the lease dated by 30s is still live at the server's 2s")
	}
	if _, _, err := tb.Begin(Ref{StreamSeq: 2, Delivered: 1}, OpAck, start.Add(time.Second)); err != nil {
		t.Fatalf("the lease dated by 2s: %v", err)
	}
	// Recorded after the change, though dated before it.
	tb.Add(Lease{StreamSeq: 3, ConsumerSeq: 3, Delivered: 1, Deadline: long.Deadline(start, 1), Wait: 30 * time.Second, AckSubject: "c"})
	if _, _, err := tb.Begin(Ref{StreamSeq: 3, Delivered: 1}, OpAck, late); err == nil {
		t.Fatal("a lease dated by the old timing and recorded after the change outlives the server's 2s")
	}
}

// A redelivery of a message whose lease has time left is AddedEarly: the
// server's timing is shorter than the lease's.
func TestARedeliveryBeforeTheDeadlineIsEarly(t *testing.T) {
	now := time.Now()
	tb := NewTable(time.Minute)
	tb.Add(Lease{StreamSeq: 1, ConsumerSeq: 1, Delivered: 1, Deadline: now.Add(time.Minute), AckSubject: "a"})
	if got := tb.Add(Lease{StreamSeq: 1, ConsumerSeq: 2, Delivered: 2, Deadline: now.Add(time.Minute), AckSubject: "b"}); got != AddedEarly {
		t.Fatalf("redelivery before the deadline: %v; want AddedEarly", got)
	}
	tb.Add(Lease{StreamSeq: 2, ConsumerSeq: 3, Delivered: 1, Deadline: now.Add(-time.Second), AckSubject: "c"})
	if got := tb.Add(Lease{StreamSeq: 2, ConsumerSeq: 4, Delivered: 2, Deadline: now.Add(time.Minute), AckSubject: "d"}); got != AddedFresh {
		t.Fatalf("redelivery after the deadline: %v; want AddedFresh", got)
	}
}
