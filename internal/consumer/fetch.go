package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/pull"
	"github.com/jetgate/jetgate/internal/token"
)

// Delivery is one leased message.
type Delivery struct {
	Token    string
	Subject  string
	Data     []byte
	Header   nats.Header
	Meta     pull.Metadata
	Deadline time.Time
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
	EmptyNone          EmptyReason = iota // messages were returned
	EmptyNoMessages                       // nothing arrived before expires
	EmptyMaxAckPending                    // the consumer is at max_ack_pending
	EmptyMaxBytes                         // the next message is larger than max_bytes
	EmptyMaxWaiting                       // too many pulls already wait on the consumer
)

// FetchRequest is a validated Fetch.
type FetchRequest struct {
	Batch     int
	Expires   time.Duration // 0: return at once with what is available
	MaxBytes  int64         // 0: no limit
	Principal string
}

// FetchResult is what a Fetch leased.
type FetchResult struct {
	Messages []*Delivery
	Empty    EmptyReason
}

// A Fetch whose pull the server keeps open after its first messages (the
// consumer is at max_ack_pending) answers once the server pauses for
// fetchGap, or fetchMaxLinger after the first message, rather than at the
// pull's heartbeat.
const (
	fetchGap       = 5 * time.Millisecond
	fetchMaxLinger = 50 * time.Millisecond
)

// deadlineSlack is kept from the caller's own deadline so that the answer
// can reach it in time.
const deadlineSlack = 50 * time.Millisecond

// Fetch leases up to req.Batch messages: the orphans of canceled Fetches
// first, else one pull request that asks for what is available, waits up to
// expires for a first message, and ends as soon as the server has sent what
// it had. When it returns, no pull of its own is left to a caller: one the
// caller left is the orphan pool's.
func (c *Consumer) Fetch(ctx context.Context, req FetchRequest) (FetchResult, error) {
	res, _, err := c.fetch(ctx, req)
	return res, err
}

// fetch is Fetch that also returns the pull it abandoned to the orphan pool
// (the caller left, or the server went silent), if any.
func (c *Consumer) fetch(ctx context.Context, req FetchRequest) (FetchResult, *pull.Pull, error) {
	if err := ctx.Err(); err != nil {
		return FetchResult{}, nil, err
	}
	now := time.Now()
	maxBytes := c.maxFetchBytes
	if req.MaxBytes > 0 {
		maxBytes = min(maxBytes, req.MaxBytes)
	}
	arrivals := c.orphans.arrivals() // before looking: what comes after wakes the wait
	if res, ok, err := c.fromOrphans(ctx, req, maxBytes, now); ok || err != nil {
		return res, nil, err
	}
	if !c.nc.IsConnected() {
		return FetchResult{}, nil, fmt.Errorf("%w: not connected", errs.ErrUnavailable)
	}
	expires := req.Expires
	if dl, ok := ctx.Deadline(); ok {
		expires = max(min(expires, time.Until(dl)-deadlineSlack), 0)
	}
	if c.maxExpires > 0 {
		expires = min(expires, c.maxExpires)
	}
	until := now.Add(expires)
	noWait := true
	for {
		if res, placed, err := c.place(ctx, req, maxBytes, until); !placed {
			if err != nil || len(res.Messages) > 0 {
				return res, nil, err
			}
			// It waited in line until its expiry: a message would have
			// ended the pull of a caller ahead of it.
			return FetchResult{Empty: c.emptyReason(ctx)}, nil, nil
		}
		p, err := pull.Start(c.nc, c.Stream, c.Name, c.pullFor(req.Batch, maxBytes, time.Until(until), noWait), c.waiting.release)
		if err != nil {
			c.waiting.release()
			return FetchResult{}, nil, err
		}
		msgs, ended, err := p.Next(ctx, fetchGap, fetchMaxLinger, arrivals)
		for !ended && err == nil && len(msgs) == 0 {
			// Orphans came while this Fetch waited on its own pull (a
			// canceled Fetch's pull took a message): take them, and leave
			// this pull to the pool.
			arrivals = c.orphans.arrivals()
			if res, ok, err := c.fromOrphans(ctx, req, maxBytes, time.Now()); ok || err != nil {
				c.orphans.abandon(p, time.Now())
				return res, p, err
			}
			msgs, ended, err = p.Next(ctx, fetchGap, fetchMaxLinger, arrivals)
		}
		if !ended && err == nil && !c.heldFull(ctx, len(msgs)) {
			// A pause, but the consumer is not at max_ack_pending: the
			// server is only slow to send (a slow link, large messages, a
			// slow disk). Wait for the pull's end, as ever, rather than leave
			// the rest of the batch to the orphan pool, and to a Nak if no
			// Fetch follows.
			var rest []pull.Msg
			rest, ended, err = p.Next(ctx, 0, 0, nil)
			msgs = append(msgs, rest...)
		}
		switch {
		case !ended && err == nil:
			// The server holds the pull open at max_ack_pending, filling it
			// as settles make room, until its heartbeat. The Fetch answers
			// with what came (the server has sent what it had); what the
			// pull still receives goes to the next Fetch, through the orphan
			// pool.
			c.orphans.abandon(p, time.Now())
		case !ended && len(msgs) > 0:
			// The caller left, or the server went silent, with messages in
			// hand: they stay with the pull, for the orphan pool.
			p.Unread(msgs)
			msgs = nil
		}
		switch {
		case errors.Is(err, jetstream.ErrNoHeartbeat):
			c.orphans.abandon(p, time.Now())
			if c.serverAnswers(ctx) {
				// The server is there but dropped the pull: past
				// max_waiting it drops a pull that asks for heartbeats
				// without a word. Clients outside jetgate hold the places
				// (or did when it came; they may be free by now).
				return FetchResult{Empty: EmptyMaxWaiting}, p, nil
			}
			return FetchResult{}, p, fmt.Errorf("%w: no answer or heartbeat from the server for the pull", errs.ErrUnavailable)
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			c.orphans.abandon(p, time.Now())
			return FetchResult{}, p, err
		}
		if ds := c.receiveAll(msgs); len(ds) > 0 {
			if err := ctx.Err(); err != nil {
				// The caller left as the pull ended: its answer would be lost.
				c.orphans.keep(ds, time.Now())
				return FetchResult{}, nil, err
			}
			return c.lease(ds, req.Principal), nil, nil
		}
		if errors.Is(err, pull.ErrRequestsPending) {
			// Other pulls wait for more than is pending (the consumer is at
			// max_ack_pending), so a no_wait pull is refused at once. Wait
			// in line with a plain pull instead.
			noWait = false
		}
		empty, retry, err := c.endedEmpty(ctx, err, maxBytes)
		if err != nil {
			return FetchResult{}, nil, err
		}
		if !retry || time.Until(until) < pull.ImmediateExpiry {
			if empty == EmptyNone {
				empty = c.emptyReason(ctx)
			}
			return FetchResult{Empty: empty}, nil, nil
		}
	}
}

// endedEmpty maps the status that ended a pull with nothing for its caller:
// why it is empty when the status says (EmptyNone when emptyReason must
// tell), a reason to pull again, or an error.
func (c *Consumer) endedEmpty(ctx context.Context, err error, maxBytes int64) (empty EmptyReason, retry bool, _ error) {
	switch {
	case err == nil, errors.Is(err, jetstream.ErrNoMessages), errors.Is(err, jetstream.ErrBatchCompleted):
	case errors.Is(err, pull.ErrRequestsPending), errors.Is(err, jetstream.ErrConsumerLeadershipChanged):
		retry = true
	case errors.Is(err, jetstream.ErrConsumerDeleted):
		return 0, false, fmt.Errorf("%w: the consumer was deleted", errs.ErrConsumerNotFound)
	case errors.Is(err, jetstream.ErrMaxBytesExceeded) && maxBytes < c.maxFetchBytes:
		return EmptyMaxBytes, false, nil // the caller's own max_bytes
	case errors.Is(err, jetstream.ErrMaxBytesExceeded):
		return 0, false, fmt.Errorf("%w: the next message is larger than the %d bytes one Fetch may return (the gateway's max fetch bytes); raise that limit to receive it",
			errs.ErrMessageTooLarge, c.maxFetchBytes)
	case errors.Is(err, pull.ErrExceededMaxWaiting):
		return EmptyMaxWaiting, false, nil
	case errors.Is(err, jetstream.ErrServerShutdown):
		return 0, false, fmt.Errorf("%w: the server is shutting down", errs.ErrUnavailable)
	case errors.Is(err, nats.ErrNoResponders):
		return 0, false, c.noResponders(ctx)
	default: // a limit of the consumer's (max_batch, max_expires, max_bytes) or a status unknown
		c.log.Error("the server refused a pull request", "err", err)
		return 0, false, fmt.Errorf("%w: %v", errs.ErrPullRefused, err)
	}
	return EmptyNone, retry, nil
}

// place takes one of the replica's places among the consumer's waiting
// pulls, in line up to until if all are taken. A caller that waited takes
// instead the orphans a canceled Fetch left meanwhile, if any, in res. Not
// placed with no messages and no error: until passed in line.
func (c *Consumer) place(ctx context.Context, req FetchRequest, maxBytes int64, until time.Time) (res FetchResult, placed bool, err error) {
	ok, waited := c.waiting.acquire(ctx, until)
	if !ok {
		return FetchResult{}, false, ctx.Err()
	}
	if waited {
		if res, ok, err := c.fromOrphans(ctx, req, maxBytes, time.Now()); ok || err != nil {
			c.waiting.release()
			return res, false, err
		}
	}
	return FetchResult{}, true, nil
}

// fromOrphans leases up to req.Batch orphans of canceled Fetches, if any
// are held; ok reports that it did.
func (c *Consumer) fromOrphans(ctx context.Context, req FetchRequest, maxBytes int64, now time.Time) (res FetchResult, ok bool, err error) {
	held := c.orphans.take(req.Batch, maxBytes, now)
	if len(held) == 0 {
		return FetchResult{}, false, nil
	}
	if err := ctx.Err(); err != nil {
		c.orphans.putBack(held)
		return FetchResult{}, false, err
	}
	ds := make([]*Delivery, len(held))
	for i, o := range held {
		ds[i] = o.d
	}
	c.handed.Add(float64(len(ds)))
	return c.lease(ds, req.Principal), true, nil
}

// pullFor shapes the pull for a Fetch of batch messages and maxBytes with
// wait left to go. What does not fit stays with the server for the next
// Fetch.
func (c *Consumer) pullFor(batch int, maxBytes int64, wait time.Duration, noWait bool) pull.Request {
	if room := c.maxAckPending - c.leases.Live(); room > 0 && room < batch {
		// A no_wait pull cut short by max_ack_pending is held open by the
		// server until the next heartbeat: ask only for what fits.
		batch = room
	}
	if c.maxBatch > 0 {
		batch = min(batch, c.maxBatch)
	}
	if !noWait {
		// A plain pull would wait for its whole batch: ask for one, which
		// ends it the moment it arrives.
		batch = 1
	}
	return pull.NewRequest(batch, wait, noWait, maxBytes)
}

// receive turns a pulled message into a delivery and records its lease,
// clocked from when it arrived.
func (c *Consumer) receive(m pull.Msg) (*Delivery, bool) {
	md, err := pull.ParseAckSubject(m.Reply)
	if err != nil {
		c.log.Warn("pulled message without a JetStream ack subject", "subject", m.Subject)
		return nil, false
	}
	d := &Delivery{
		Subject:  m.Subject,
		Data:     m.Data,
		Header:   m.Header,
		Meta:     md,
		Deadline: c.policy.Deadline(m.At, md.Delivered),
	}
	c.leases.Add(lease.Lease{
		StreamSeq:   md.StreamSeq,
		ConsumerSeq: md.ConsumerSeq,
		Delivered:   md.Delivered,
		Deadline:    d.Deadline,
		AckSubject:  m.Reply,
	})
	return d, true
}

func (c *Consumer) receiveAll(msgs []pull.Msg) []*Delivery {
	ds := make([]*Delivery, 0, len(msgs))
	for _, m := range msgs {
		if d, ok := c.receive(m); ok {
			ds = append(ds, d)
		}
	}
	return ds
}

func (c *Consumer) claimsOf(d *Delivery) token.Claims {
	return token.Claims{
		Issuer:      c.self,
		StreamSeq:   d.Meta.StreamSeq,
		ConsumerSeq: d.Meta.ConsumerSeq,
		Delivered:   d.Meta.Delivered,
		Deadline:    d.Deadline,
	}
}

// lease issues the tokens of deliveries that are about to be handed out.
func (c *Consumer) lease(ds []*Delivery, principal string) FetchResult {
	sealer := c.keys.Sealer(c.Stream, c.Name, principal)
	for _, d := range ds {
		d.Token = sealer.Seal(c.claimsOf(d))
	}
	return FetchResult{Messages: ds}
}

// serverAnswers reports whether the server answers for the consumer.
func (c *Consumer) serverAnswers(ctx context.Context) bool {
	if !c.nc.IsConnected() {
		return false
	}
	_, err := c.info(context.WithoutCancel(ctx), time.Second)
	return err == nil
}

// emptyReason says why nothing came: the gateway's own count of leases, or
// failing that the server's, at max_ack_pending.
func (c *Consumer) emptyReason(ctx context.Context) EmptyReason {
	if c.leases.Live() >= c.maxAckPending || c.serverAtMaxAckPending(ctx) {
		return EmptyMaxAckPending
	}
	return EmptyNoMessages
}

// heldFull reports whether the consumer is at max_ack_pending, with n
// messages just in hand that are not yet leased: by the replica's own count
// of leases, or else by the server's (asked at most once a second).
func (c *Consumer) heldFull(ctx context.Context, n int) bool {
	return c.leases.Live()+n >= c.maxAckPending || c.serverAtMaxAckPending(ctx)
}

// serverAtMaxAckPending asks the server whether the consumer is at
// max_ack_pending with messages waiting, at most once a second: clients
// polling with expires 0s must not turn into a stream of info requests.
func (c *Consumer) serverAtMaxAckPending(ctx context.Context) bool {
	c.mu.Lock()
	if time.Since(c.fullAt) < time.Second {
		full := c.full
		c.mu.Unlock()
		return full
	}
	c.mu.Unlock()
	ci, err := c.info(context.WithoutCancel(ctx), time.Second)
	full := err == nil && ci.NumAckPending >= c.maxAckPending && ci.NumPending > 0
	c.mu.Lock()
	c.full, c.fullAt = full, time.Now()
	c.mu.Unlock()
	return full
}
