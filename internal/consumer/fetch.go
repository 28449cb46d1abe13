package consumer

import (
	"cmp"
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"

	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/pull"
	"github.com/jetgate/jetgate/internal/tracing"
)

// Delivery is one leased message.
type Delivery struct {
	Token    string
	Subject  string
	Data     []byte
	Header   nats.Header
	Meta     pull.Metadata
	Deadline time.Time
	Origin   trace.SpanContext // its creation context, while tracing
}

// size is about what the server counts against a pull's max_bytes.
func (d *Delivery) size() int64 {
	n := len(d.Subject) + len(d.Data)
	for k, vs := range d.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return int64(n)
}

// EmptyReason says why a Fetch returned nothing.
type EmptyReason int

// The reasons, numbered as the API's EmptyReason enum.
const (
	EmptyNone            EmptyReason = iota // messages were returned
	EmptyNoMessages                         // nothing arrived before expires
	EmptyMaxAckPending                      // the consumer is at max_ack_pending
	EmptyMaxBytes                           // the next message is larger than max_bytes
	EmptyMaxWaiting                         // too many pulls already wait on the consumer
	EmptyPaused                             // the consumer is paused
	EmptyPinned                             // another client holds the group's pin
	EmptyBelowMinPending                    // the overflow thresholds are not reached
)

// FetchRequest is a validated Fetch.
type FetchRequest struct {
	Batch     int
	Expires   time.Duration // 0: return at once with what is available
	MaxBytes  int64         // 0: no limit
	Priority  pull.Priority // of a consumer with priority groups
	Principal string
}

// FetchResult is what a Fetch leased.
type FetchResult struct {
	Messages []*Delivery
	Empty    EmptyReason
	PinID    string // the pin the server gave the caller (pinned_client)
}

// A Fetch whose pull the server keeps open after its first messages (the
// consumer is at max_ack_pending) answers once the server pauses for
// fetchGap, or fetchMaxLinger after the first message, rather than at the
// pull's heartbeat.
const (
	fetchGap       = 5 * time.Millisecond
	fetchMaxLinger = 50 * time.Millisecond
)

// Fetch leases up to req.Batch messages: the orphans of canceled Fetches
// first, else one pull request that asks for what is available, waits up to
// expires for a first message, and ends as soon as the server has sent what
// it had. When it returns, no pull of its own is left to a caller: one the
// caller left is the orphan pool's.
func (c *Consumer) Fetch(ctx context.Context, req FetchRequest) (FetchResult, error) {
	if err := cmp.Or(ctx.Err(), c.servable()); err != nil {
		return FetchResult{}, err
	}
	pri, err := c.priorityOf(req.Priority)
	if err != nil {
		return FetchResult{}, err
	}
	lim := c.limits(ctx, req.Batch, req.MaxBytes, req.Expires, req.Principal)
	lim.waitBatch, lim.priority = 1, pri
	s := &fetchSink{c: c}
	empty, left, err := c.pullLoop(ctx, lim, s)
	switch {
	case len(s.got) > 0 && ctx.Err() != nil:
		// The caller left with messages in hand: its answer would be lost.
		c.orphans.keep(s.got, left, time.Now())
		c.wake()
		return FetchResult{}, ctx.Err()
	case len(s.got) > 0:
		return FetchResult{Messages: s.got, PinID: PinOf(s.got)}, nil
	case err != nil:
		return FetchResult{}, err
	case empty == EmptyNone:
		empty = c.emptyReason(ctx, pri)
	}
	return FetchResult{Empty: empty}, nil
}

// fetchSink collects a Fetch's answer.
type fetchSink struct {
	c   *Consumer
	got []*Delivery
}

func (f *fetchSink) pause() (gap, linger time.Duration) { return fetchGap, fetchMaxLinger }

// take answers once the pull has ended, or when the server pauses while the
// consumer is at max_ack_pending: the server then holds the pull open,
// filling it as settles make room, until its heartbeat, and what it still
// receives goes to the next Fetch through the orphan pool. Otherwise the
// server is only slow to send (a slow link, large messages, a slow disk):
// the Fetch waits for more rather than leave the rest of its batch to the
// orphan pool, and to a Nak if no Fetch follows.
func (f *fetchSink) take(ctx context.Context, ds []*Delivery, open bool) (bool, error) {
	f.got = append(f.got, ds...)
	return !open || f.c.atMaxAckPending(ctx), nil
}

// receive turns a message pulled by p into a delivery and records its
// lease, clocked from when it arrived. A delivery that shows the consumer
// was reset (reset.go) voids every lease held before it.
func (c *Consumer) receive(p *pull.Pull, m pull.Msg) (*Delivery, bool) {
	md, err := pull.ParseAckSubject(m.Reply)
	if err != nil {
		c.log.Warn("pulled message without a JetStream ack subject", "subject", m.Subject)
		return nil, false
	}
	timing := c.timing()
	d := &Delivery{
		Subject:  m.Subject,
		Data:     m.Data,
		Header:   m.Header,
		Meta:     md,
		Deadline: timing.Deadline(m.At, md.Delivered),
	}
	l := lease.Lease{
		StreamSeq:   md.StreamSeq,
		ConsumerSeq: md.ConsumerSeq,
		Delivered:   md.Delivered,
		Deadline:    d.Deadline,
		Wait:        timing.AckWaitFor(md.Delivered),
		AckSubject:  m.Reply,
	}
	if c.traced {
		if d.Origin = tracing.Origin(m.Header); d.Origin.IsValid() {
			o := d.Origin // not a pointer into d, which holds the message
			l.Origin = &o
		}
	}
	seqs := delivery{cseq: md.ConsumerSeq, sseq: md.StreamSeq, delivered: md.Delivered}
	early := false
	add := func() bool {
		added := c.leases.Add(l)
		early = added == lease.AddedEarly
		return added == lease.AddedReset
	}
	switch reset, stale := c.resets.admit(&p.Mark, seqs, add); {
	case early:
		c.redeliveredEarly()
	case reset:
		c.tellReset("a delivery showed it", "stream_seq", md.StreamSeq, "consumer_seq", md.ConsumerSeq, "delivered", md.Delivered)
	case stale:
		c.log.Debug("not leased: a delivery that may be from before a consumer reset", "stream_seq", md.StreamSeq, "consumer_seq", md.ConsumerSeq)
		return nil, false
	}
	return d, true
}

func (c *Consumer) receiveAll(p *pull.Pull, msgs []pull.Msg) []*Delivery {
	ds := make([]*Delivery, 0, len(msgs))
	for _, m := range msgs {
		if d, ok := c.receive(p, m); ok {
			ds = append(ds, d)
		}
	}
	return ds
}
