package lease

import (
	"testing"
	"time"
)

func TestMargin(t *testing.T) {
	tests := []struct{ ackWait, want time.Duration }{
		{time.Second, 100 * time.Millisecond},
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
