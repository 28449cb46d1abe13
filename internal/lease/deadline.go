package lease

import (
	"slices"
	"time"
)

// MaxMargin is the largest safety margin kept before the server's own
// redelivery: a lease ends a tenth of its ack wait early, at least
// MinMargin (half the wait at most), at most MaxMargin.
const MaxMargin = 2 * time.Second

// MinMargin is the least margin where the wait allows it. The server's
// clock for a delivery starts as it sends it, jetgate's as it receives it,
// and a delivery can arrive that much later: a CPU-throttled container, a
// GC pause, a loaded machine (a tenth of a 1s BackOff step, 100ms, was seen
// overrun under load).
const MinMargin = 250 * time.Millisecond

// Margin is how much earlier than the server's redelivery a lease with the
// given ack wait ends. Clocks, the network and the sweep all take time, and
// a lease must never be called live after JetStream has redelivered it.
func Margin(ackWait time.Duration) time.Duration {
	return min(max(ackWait/10, min(MinMargin, ackWait/2)), MaxMargin)
}

// Policy is a consumer's redelivery timing: its ack_wait, or its BackOff
// steps by delivery count.
type Policy struct {
	AckWait time.Duration
	BackOff []time.Duration
	// Early is how much sooner than its wait the server may redeliver with
	// jetgate hearing nothing of it: RestorePrecision for a consumer with no
	// raft log held by a server other than the one jetgate is connected to,
	// whose restart is neither a reconnect nor a new leader's advisory.
	Early time.Duration
}

// AckWaitFor is how long the server waits for the answer to the given
// delivery before redelivering it: its BackOff step, or ack_wait.
func (p Policy) AckWaitFor(delivered uint64) time.Duration {
	if n := uint64(len(p.BackOff)); n > 0 {
		if delivered > n {
			delivered = n
		}
		if delivered > 0 {
			return p.BackOff[delivered-1]
		}
	}
	return p.AckWait
}

// Deadline is when a lease of the given delivery, clocked from start (its
// receipt, or a +WPI), ends: the server's wait minus Margin, and Early. It
// is cut to the millisecond, as tokens carry it.
func (p Policy) Deadline(start time.Time, delivered uint64) time.Time {
	return start.Add(p.Lasts(delivered)).Truncate(time.Millisecond)
}

// Lasts is how long a lease of the given delivery lasts from its start:
// the wait less its margin, less Early, which takes at most half of what
// the margin leaves (a short wait still gives a lease a caller can use,
// and the server's restart within it is a rare thing).
func (p Policy) Lasts(delivered uint64) time.Duration {
	w := p.AckWaitFor(delivered)
	left := w - Margin(w)
	return left - min(p.Early, left/2)
}

// Equal reports whether p and q time every delivery alike.
func (p Policy) Equal(q Policy) bool {
	return p.AckWait == q.AckWait && slices.Equal(p.BackOff, q.BackOff) && p.Early == q.Early
}

// Shorter is the timing that waits, for every delivery, the lesser of p's
// and q's waits (and the larger Early): what a lease may be dated by when
// the server holds one of them and which is not known yet.
func (p Policy) Shorter(q Policy) Policy {
	steps := max(len(p.BackOff), len(q.BackOff))
	s := Policy{AckWait: min(p.AckWait, q.AckWait), Early: max(p.Early, q.Early)}
	if steps > 0 {
		s.BackOff = make([]time.Duration, steps)
		for i := range s.BackOff {
			n := uint64(i + 1)
			s.BackOff[i] = min(p.AckWaitFor(n), q.AckWaitFor(n))
		}
	}
	return s
}
