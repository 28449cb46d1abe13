package lease

import (
	"cmp"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Lease is one delivery of a message and where to settle it.
type Lease struct {
	StreamSeq   uint64
	ConsumerSeq uint64
	Delivered   uint64
	Deadline    time.Time // no settle is sent at or after it
	// First is the deadline the delivery's first token carried, in unix ms
	// as tokens carry it (set by the table): a token of this delivery
	// carries no earlier one, though Deadline may be brought forward.
	First int64
	// Held is the deadline of the latest token its caller was given by an
	// Extend of its own, in unix ms; 0: none, the first token's (First).
	// An issuer's keep-alive (auto_extend, an Extend's duration) gives the
	// caller no token, and moves only Deadline.
	Held int64
	// Start is when the server's clock of the delivery started: its receipt
	// (an adopted lease: its token's Start; zero, not known). A token of
	// this delivery says it started no earlier.
	Start time.Time
	// Wait is the server's wait Deadline was dated by (the ack_wait or
	// BackOff step then in force); 0: not known, never re-dated.
	Wait       time.Duration
	AckSubject string
	// Origin is the message's creation context, kept only while tracing,
	// for the settle spans' links.
	Origin *trace.SpanContext
}

// Ref names one delivery of a message: a token's stream sequence and
// delivery count and, when the token says, its consumer sequence, deadline
// and start. After a consumer reset (or its deletion and making again) the
// server delivers a message again with its delivery count restarted, so
// that count alone does not tell two deliveries apart: the consumer
// sequence does, and where that restarted too, the start (a token of the
// delivery started at its receipt or later; a token of an earlier delivery,
// before it, however long an Extend made it last) and the deadline (a token
// of the delivery carries its first deadline or a later one).
type Ref struct {
	StreamSeq   uint64
	Delivered   uint64
	ConsumerSeq uint64    // 0: any
	Deadline    time.Time // zero: any
	Start       time.Time // zero: any (a token of an earlier release)
	// Orphan marks the Nak that gives back a lease nobody holds (a canceled
	// Fetch's, an ended stream's): refused once its caller took it back
	// with an Extend (Table.Begin).
	Orphan bool
}

// Ref is the delivery l is a lease of.
func (l Lease) Ref() Ref { return Ref{StreamSeq: l.StreamSeq, Delivered: l.Delivered} }

// CallerToken is the deadline of the latest token l's caller holds: past
// it, no replica acting on that token alone settles l, live or not.
func (l Lease) CallerToken() time.Time { return time.UnixMilli(cmp.Or(l.Held, l.First)) }

// TokenDeadline is the deadline a token of l carries now: Deadline, which
// Extends move on, or the first token's where Deadline was brought forward
// below it (a reconnect, a new leader, a shorter ack_wait). A settle of l
// by the replica itself names it so (Ref.names).
func (l Lease) TokenDeadline() time.Time {
	if first := time.UnixMilli(l.First); l.Deadline.Before(first) {
		return first
	}
	return l.Deadline
}

// names reports whether a lease of r's message, delivered delivered times
// with consumer sequence cseq, first deadline first and start start (unix
// ms, 0: not known), is delivery r.
func (r Ref) names(delivered, cseq uint64, first, start int64) bool {
	switch {
	case delivered != r.Delivered:
		return false
	case r.ConsumerSeq != 0 && r.ConsumerSeq != cseq:
		return false // a delivery from before a reset
	case !r.Start.IsZero() && start != 0 && r.Start.UnixMilli() != start:
		// Where the consumer sequence restarted too: a token of this
		// delivery started at its receipt or later (an Extend's, whatever
		// deadline a shorter ack_wait gave it), one of an earlier delivery
		// before, however long an Extend made it last.
		return r.Start.UnixMilli() > start
	case !r.Deadline.IsZero() && r.Deadline.UnixMilli() < first:
		return false // likewise, by the deadline: a token of an earlier release, or one started in the same millisecond
	}
	return true
}

// startMs is t in unix ms, 0 for the zero time (not known).
func startMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
