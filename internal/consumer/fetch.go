package consumer

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/pull"
	"github.com/jetgate/jetgate/internal/tracing"
)

// DefaultMaxFetchBytes is the bytes one Fetch pulls unless configured: a
// margin under gRPC's default 4 MiB for the tokens and metadata each
// message carries besides its data.
const DefaultMaxFetchBytes = 3 << 20

// Delivery is one leased message.
type Delivery struct {
	Token    string
	Subject  string
	Data     []byte
	Header   nats.Header
	Meta     pull.Metadata
	Deadline time.Time
	Origin   trace.SpanContext // its creation context, while tracing
	start    time.Time         // its receipt, the start of its Deadline (Claims.Start)
	// first is the deadline it was received with, which its tokens carry
	// (issuer.claims; zero: Deadline); Deadline is its lease's as it was
	// handed out (issuer.dated).
	first time.Time
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

// Fetch leases up to req.Batch messages, and counts what it returns: the
// orphans of canceled Fetches first, else one pull request that asks for
// what is available, waits up to expires for a first message, and ends as
// soon as the server has sent what it had. When it returns, no pull of its own is left to a caller: one the
// caller left is the orphan pool's.
func (pl *puller) Fetch(ctx context.Context, req FetchRequest) (FetchResult, error) {
	r, err := pl.fetch(ctx, req)
	if err != nil && (groupsRefused(err) || limitsRefused(err)) {
		// The pull was checked against the consumer's groups, or bounded
		// by its limits, as the view had them: an operator changed them,
		// and the view had not caught up (the follow of the update is
		// under way, or the request went unseen). The server's info says
		// what they are now, and the Fetch is tried once more by it.
		if _, aerr := pl.server.ask(ctx, pl.server.timeout); aerr == nil {
			return pl.fetch(ctx, req)
		}
	}
	return r, err
}

// groupsRefused reports whether the server refused a pull for its priority
// fields (a group missing, unknown, or not of the consumer's policy).
func groupsRefused(err error) bool {
	var se *pull.StatusError
	return errors.As(err, &se) && se.Code == "400" && strings.Contains(se.Description, "Priority")
}

// limitsRefused reports whether the server refused a pull over the
// consumer's max_request_batch, max_request_expires or
// max_request_max_bytes (409 "Exceeded MaxRequestBatch of 45").
func limitsRefused(err error) bool {
	var se *pull.StatusError
	return errors.As(err, &se) && se.Code == "409" && strings.Contains(strings.ToLower(se.Description), "exceeded maxrequest")
}

// fetch is one try of Fetch.
func (pl *puller) fetch(ctx context.Context, req FetchRequest) (FetchResult, error) {
	if err := cmp.Or(ctx.Err(), pl.server.servable()); err != nil {
		return FetchResult{}, err
	}
	pri, err := checkPriority(ctx, pl.server, req.Priority)
	if err != nil {
		return FetchResult{}, err
	}
	lim := pl.limits(ctx, req.Batch, req.MaxBytes, req.Expires, req.Principal)
	lim.waitBatch, lim.priority, lim.gap, lim.linger = 1, pri, fetchGap, fetchMaxLinger
	s := &fetchSink{pl: pl}
	empty, left, err := pl.pullLoop(ctx, lim, s)
	switch {
	case len(s.got) > 0 && ctx.Err() != nil:
		// The caller left with messages in hand: its answer would be lost.
		pl.orphans.keep(s.got, left, time.Now())
		pl.wake()
		return FetchResult{}, ctx.Err()
	case len(s.got) > 0:
		got, rest := fit(s.got, pl.maxFetchBytes, req.Batch)
		if len(rest) > 0 { // the next Fetch's (response.go)
			pl.orphans.spare(rest, left, pri.Group, time.Now())
			pl.wake()
		}
		pl.counts.Fetched.Add(uint64(len(got)))
		pin := PinOf(got)
		if pin != "" {
			pinGiven(pl.server, pri.Group)
		}
		return FetchResult{Messages: pl.tokens.dated(got, req.Principal), PinID: cmp.Or(pin, heldPin(pl.server, pri))}, nil
	case err != nil:
		return FetchResult{}, err
	case empty == EmptyNone:
		empty = pl.emptyReason(ctx, pri)
	}
	pl.counts.Empty[empty].Add(1)
	return FetchResult{Empty: empty, PinID: heldPin(pl.server, pri)}, nil
}

// heldPin is the pin a Fetch answers where its messages carry none (none
// came, or orphans of no pin): the pin the caller sent, which the server
// did not refuse, while the consumer is of the pinned_client policy. The
// caller sends the answer's pin with its next Fetch; answered none, it
// would be told PINNED, locked out by its own pin until priority_timeout.
// A Consume stream's heartbeats carry its pin so too.
func heldPin(s *onServer, pri pull.Priority) string {
	if s.view().policy != jetstream.PriorityPolicyPinned {
		return ""
	}
	return pri.PinID
}

// fetchSink collects a Fetch's answer.
type fetchSink struct {
	pl  *puller
	got []*Delivery
}

// take answers once the pull has ended, or when the server pauses while the
// consumer is at max_ack_pending: the server then holds the pull open,
// filling it as settles make room, until its heartbeat, and what it still
// receives goes to the next Fetch through the orphan pool. Otherwise the
// server is only slow to send (a slow link, large messages, a slow disk):
// the Fetch waits for more rather than leave the rest of its batch to the
// orphan pool, and to a Nak if no Fetch follows.
func (f *fetchSink) take(ctx context.Context, ds []*Delivery, open bool) (bool, error) {
	f.got = append(f.got, ds...)
	return !open || f.pl.atMaxAckPending(ctx), nil
}

// receive turns a message pulled by the pull marked mark into a delivery
// and records its lease, clocked from when it arrived, unless the reset
// rules (reset.go) say it may be from before a reset. A delivery that shows
// the consumer was reset voids every lease held before it.
func (pl *puller) receive(mark *seqMark, m pull.Msg) (*Delivery, bool) {
	md, err := pull.ParseAckSubject(m.Reply)
	if err != nil {
		pl.log.Warn("pulled message without a JetStream ack subject", "subject", m.Subject)
		return nil, false
	}
	timing := pl.server.timing()
	d := &Delivery{
		Subject:  m.Subject,
		Data:     m.Data,
		Header:   m.Header,
		Meta:     md,
		Deadline: timing.Deadline(m.At, md.Delivered),
		start:    m.At,
	}
	d.first = d.Deadline
	l := lease.Lease{
		StreamSeq:   md.StreamSeq,
		ConsumerSeq: md.ConsumerSeq,
		Delivered:   md.Delivered,
		Deadline:    d.Deadline,
		Start:       m.At,
		Wait:        timing.AckWaitFor(md.Delivered),
		AckSubject:  m.Reply,
	}
	if pl.traced {
		if d.Origin = tracing.Origin(m.Header); d.Origin.IsValid() {
			o := d.Origin // not a pointer into d, which holds the message
			l.Origin = &o
		}
	}
	seqs := delivery{cseq: md.ConsumerSeq, sseq: md.StreamSeq, delivered: md.Delivered}
	if !pl.server.admit(mark, seqs, func() lease.Added { return pl.leases.Add(l) }) {
		return nil, false
	}
	if leaders := pl.server.leaders.Load(); mark.Leaders != leaders {
		// A pull sent before a new leader was elected may bring the old
		// one's deliveries after the leases were cut: cut this one too,
		// once a pull (Shorten cuts a lease once).
		pl.leases.Shorten()
		mark.Leaders = leaders
	}
	return d, true
}

// flushed takes in what NATS sent before now (an update request that
// passed, cutting ack_wait: the leases it cuts are cut as the relay takes
// it): a flush, then caughtUp. Orphans handed out are dated after it, as a
// pull's deliveries are dated after what came before them (read); a flush
// is the round trip of the pull they stand for. NATS away: what came.
func (pl *puller) flushed(ctx context.Context) {
	if pl.nc.IsConnected() {
		fctx, cancel := context.WithTimeout(ctx, pl.server.timeout)
		_ = pl.nc.FlushWithContext(fctx)
		cancel()
	}
	pl.caughtUp(ctx)
}

func (pl *puller) receiveAll(mark *seqMark, msgs []pull.Msg) []*Delivery {
	ds := make([]*Delivery, 0, len(msgs))
	for _, m := range msgs {
		if d, ok := pl.receive(mark, m); ok {
			ds = append(ds, d)
		}
	}
	return ds
}

// emptyReason says why nothing came: the consumer is paused (by anyone), or
// at max_ack_pending, or another client holds the pin, or the caller's
// overflow thresholds are not reached, as the server last said, or there
// was nothing.
func (pl *puller) emptyReason(ctx context.Context, pri pull.Priority) EmptyReason {
	v := pl.server.recent(ctx)
	switch {
	case v.paused:
		return EmptyPaused
	case pl.atMaxAckPending(ctx):
		return EmptyMaxAckPending
	case v.policy == jetstream.PriorityPolicyPinned && pri.PinID == "" && v.pinned[pri.Group]:
		return EmptyPinned
	case v.policy == jetstream.PriorityPolicyOverflow && v.pending > 0 && belowThresholds(pri, v):
		return EmptyBelowMinPending
	}
	return EmptyNoMessages
}

// atMaxAckPending reports whether the consumer is at max_ack_pending: by the
// replica's own count of leases, or else by the server's (asked at most
// once a second).
func (pl *puller) atMaxAckPending(ctx context.Context) bool {
	return pl.leases.Live() >= pl.server.view().limits.maxAckPending || pl.server.recent(ctx).full
}

// PinOf is the pin the last of ds carries, if any.
func PinOf(ds []*Delivery) string {
	for _, d := range slices.Backward(ds) {
		if pin := d.Header.Get(pull.PinHeader); pin != "" {
			return pin
		}
	}
	return ""
}

// markNow is the mark of a pull about to be sent, one that may wait on the
// server (waits) or one answered at once. The server keeps its waiting
// pulls through a reset and hands them the replay, numbered from 1, one
// message each in turn: it shows the reset to a pull marked at or above
// max_waiting (regressed). Marks below (the replica received nothing since
// the last reset or its bind, or little while others received more) may be
// below the replay too, which would then pass for deliveries from before
// the reset and sit unleased until ack_wait. So while they are, the
// server's delivered count is asked first: deliveries to the pull, sent
// after the answer, are numbered above it until the next reset
// (resetWatch.informed). Pulls that came while one asked share its answer;
// one answered at once asks at most once a second within an epoch. An info
// that fails leaves the marks as they were. priority is the pull's
// (prioritized).
func (pl *puller) markNow(ctx context.Context, waits bool, priority uint8) seqMark {
	came := time.Now()
	if m := pl.server.mark(); !pl.marksLow(m, priority) {
		return m
	}
	pl.blind.Lock()
	defer pl.blind.Unlock()
	m := pl.server.mark()
	asked := m.Epoch == pl.blind.epoch
	shared := asked && pl.blind.at.After(came)
	lately := asked && !waits && time.Since(pl.blind.at) < time.Second
	if !pl.marksLow(m, priority) || shared || lately {
		return m
	}
	pl.blind.epoch, pl.blind.at = m.Epoch, time.Now()
	_, _ = pl.server.ask(ctx, time.Second)
	return pl.server.mark()
}

// defaultMaxWaiting is the server's max_waiting for a consumer whose view
// names none.
const defaultMaxWaiting = 512

// marksLow reports whether a replay to a pull already waiting may be
// numbered above marks m: they are below the consumer's max_waiting, or its
// prioritized policy hands the replay to the pulls of a lower priority
// number first, as many as their batches take. None is lower than 0: a
// pull of priority 0 waits behind those of 0 alone, served in turn (the
// server requeues each at the end of its priority), as any pull of the
// other policies, and needs no more than they do.
func (pl *puller) marksLow(m seqMark, priority uint8) bool {
	v := pl.server.view()
	if v.policy == jetstream.PriorityPolicyPrioritized && priority > 0 {
		return true
	}
	return m.Floor < uint64(cmp.Or(v.limits.maxWaiting, defaultMaxWaiting))
}
