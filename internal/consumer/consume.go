package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/pull"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// Defaults of a Consume.
const (
	DefaultConsumeMessages  = 200
	DefaultConsumeHeartbeat = 15 * time.Second
	// DefaultMaxLease is how long auto_extend keeps one lease alive.
	DefaultMaxLease = time.Hour
	// A Consume stream sends the messages of a pull that is still open (the
	// consumer is at max_ack_pending, and settles let messages through one
	// by one) once the server pauses for consumeGap, or the oldest has
	// waited consumeMaxLinger: a burst goes as one response, not one
	// response (and one Ack) a message.
	consumeGap       = time.Millisecond
	consumeMaxLinger = 5 * time.Millisecond
)

// consumeMaxWait bounds one pull of a Consume (a variable for tests).
var consumeMaxWait = time.Second

// ConsumeRequest is a validated Consume.
type ConsumeRequest struct {
	MaxMessages int
	MaxBytes    int64 // 0: no limit but the Fetch bound
	Heartbeat   time.Duration
	AutoExtend  bool
	Principal   string
}

// Consume leases messages to send as they come, never holding more than
// req.MaxMessages (and req.MaxBytes) unsettled leases at once: it pulls
// for the room it has, and again once half of it is free, as async-nats
// does, and sends a pull's messages while the pull is still open
// (pullInto). An idle stream sends an empty batch every req.Heartbeat. With
// req.AutoExtend its leases are extended (+WPI) before their deadlines, up
// to the maximum lease time. When ctx ends or send fails, every lease it
// still holds is nak'ed back at once, once the pull it left open (if any)
// has ended, so that they are redelivered in milliseconds rather than
// after ack_wait.
func (c *Consumer) Consume(ctx context.Context, req ConsumeRequest, send func([]*Delivery) error) error {
	s := &stream{held: make(map[uint64]*heldLease), credit: make(chan struct{}, 1)}
	var last *pull.Pull // the pull the stream left open, to the orphan pool
	sendFailed := false // the caller is gone
	defer func() { c.endStream(s, sendFailed || ctx.Err() != nil, last) }()
	lastSend := time.Now()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		now := time.Now()
		if c.expireHeld(s, now) {
			continue
		}
		if req.AutoExtend {
			c.extendHeld(ctx, s, req.Principal, now)
		}
		untilBeat := lastSend.Add(req.Heartbeat).Sub(now)
		if untilBeat <= 0 {
			if err := send(nil); err != nil {
				sendFailed = true
				return err
			}
			lastSend = time.Now()
			continue
		}
		// A pull lasts at most consumeMaxWait: when the stream ends, its
		// leases wait for its last pull to end before they are nak'ed.
		wait := min(untilBeat, c.untilNextDue(s, req.AutoExtend, now), consumeMaxWait)
		n, bytes := s.load()
		room := req.MaxMessages - n
		roomBytes := c.maxFetchBytes
		if req.MaxBytes > 0 {
			roomBytes = min(roomBytes, req.MaxBytes-bytes)
		}
		if (n == 0 || room*2 >= req.MaxMessages) && roomBytes > 0 {
			empty, abandoned, err := c.pullInto(ctx, FetchRequest{Batch: room, Expires: wait, MaxBytes: roomBytes, Principal: req.Principal},
				func(res FetchResult) error {
					now := time.Now()
					for _, d := range res.Messages {
						cl := c.claimsOf(d)
						s.add(d, cl, now)
						c.streams.own(s, cl.StreamSeq, cl.Delivered)
					}
					if err := send(res.Messages); err != nil {
						sendFailed = true
						return err
					}
					lastSend = time.Now()
					return nil
				})
			if abandoned != nil {
				last = abandoned
			}
			if err != nil {
				return err
			}
			if empty != EmptyMaxBytes {
				continue
			}
			// The next message does not fit in the bytes left: wait for
			// settles to free some, or, holding nothing, it never will.
			if n == 0 {
				return fmt.Errorf("%w: the next message is larger than the stream's max_bytes (%d); open the stream with a larger max_bytes to receive it",
					errs.ErrMessageTooLarge, req.MaxBytes)
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-s.credit:
		case <-t.C:
		}
		t.Stop()
	}
}

// pullInto leases messages for a Consume stream and hands them to each as
// they arrive: the orphans of canceled Fetches first, else one pull for
// req.Batch that stays open up to req.Expires. Unlike a Fetch, which waits
// for its pull to end, the stream passes messages on as the server sends
// them, so that a pull filled slowly (the consumer at max_ack_pending, or
// a trickle of messages) does not hold back those it already has. It
// returns why nothing came (when the status says), and the pull it left to
// the orphan pool, if any: each failed, ctx ended, or the server went silent
// while it was open.
func (c *Consumer) pullInto(ctx context.Context, req FetchRequest, each func(FetchResult) error) (EmptyReason, *pull.Pull, error) {
	now := time.Now()
	maxBytes := c.maxFetchBytes
	if req.MaxBytes > 0 {
		maxBytes = min(maxBytes, req.MaxBytes)
	}
	if res, ok, err := c.fromOrphans(ctx, req, maxBytes, now); ok || err != nil {
		if err == nil {
			err = each(res)
		}
		return EmptyNone, nil, err
	}
	if !c.nc.IsConnected() {
		return EmptyNone, nil, fmt.Errorf("%w: not connected", errs.ErrUnavailable)
	}
	until := now.Add(min(req.Expires, cmp.Or(c.maxExpires, req.Expires)))
	noWait := true
	for {
		if res, placed, err := c.place(ctx, req, maxBytes, until); !placed {
			if err == nil && len(res.Messages) > 0 {
				err = each(res)
			}
			return EmptyNone, nil, err
		}
		// As for Fetch: a no_wait pull returns what is available at once
		// and otherwise the first messages to come. Only at max_ack_pending
		// does it stay open, filling as settles make room.
		preq := c.pullFor(req.Batch, maxBytes, time.Until(until), true)
		if !noWait {
			preq = pull.NewRequest(min(req.Batch, cmp.Or(c.maxBatch, req.Batch)), time.Until(until), false, maxBytes)
		}
		reconnects := c.nc.Stats().Reconnects
		p, err := pull.Start(c.nc, c.Stream, c.Name, preq, c.waiting.release)
		if err != nil {
			c.waiting.release()
			return EmptyNone, nil, err
		}
		sent := false
		for {
			msgs, ended, err := p.Next(ctx, consumeGap, consumeMaxLinger, nil)
			if !ended && err != nil {
				c.orphans.abandon(p, time.Now())
				if !errors.Is(err, jetstream.ErrNoHeartbeat) {
					return EmptyNone, p, err
				}
				// The pull was lost with the server (the connection went
				// and came back meanwhile, or is away): the stream ends
				// UNAVAILABLE, rather than go on as if nothing had happened.
				// Otherwise the server dropped it past max_waiting, as for
				// Fetch.
				if c.nc.Stats().Reconnects != reconnects || !c.serverAnswers(ctx) {
					return EmptyNone, p, fmt.Errorf("%w: the pull was lost with the NATS server", errs.ErrUnavailable)
				}
				return EmptyMaxWaiting, p, nil
			}
			if ds := c.receiveAll(msgs); len(ds) > 0 {
				sent = true
				if err := each(c.lease(ds, req.Principal)); err != nil {
					if ended {
						return EmptyNone, nil, err
					}
					c.orphans.abandon(p, time.Now())
					return EmptyNone, p, err
				}
			}
			if !ended {
				continue
			}
			if sent {
				return EmptyNone, nil, nil
			}
			if errors.Is(err, pull.ErrRequestsPending) {
				noWait = false // as for Fetch
			}
			empty, retry, err := c.endedEmpty(ctx, err, maxBytes)
			if err != nil || !retry || time.Until(until) < pull.ImmediateExpiry {
				return empty, nil, err
			}
			break
		}
	}
}

// untilNextDue is how long until a held lease needs attention: its
// extension (auto_extend) or its deadline (when its credit returns).
func (c *Consumer) untilNextDue(s *stream, autoExtend bool, now time.Time) time.Duration {
	next := time.Hour
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.held {
		at := h.claims.Deadline
		if autoExtend {
			at = at.Add(-c.extendLead(h.claims.Delivered))
		}
		next = min(next, at.Sub(now))
	}
	return max(next, 10*time.Millisecond)
}

// extendLead is how long before a lease's deadline auto_extend renews it:
// a third of its wait, so that a slow +WPI still lands in time.
func (c *Consumer) extendLead(delivered uint64) time.Duration {
	return c.policy.AckWaitFor(delivered) / 3
}

// expireHeld gives back the credit of leases past their deadline: the server
// redelivers those messages. It reports whether any left.
func (c *Consumer) expireHeld(s *stream, now time.Time) bool {
	var gone []uint64
	s.mu.Lock()
	for seq, h := range s.held {
		if !now.Before(h.claims.Deadline) {
			gone = append(gone, seq)
			delete(s.held, seq)
			s.bytes -= h.size
		}
	}
	s.mu.Unlock()
	c.streams.forget(s, gone)
	return len(gone) > 0
}

// extendHeld renews the leases whose deadline is near, unless they have
// been held for the maximum lease time.
func (c *Consumer) extendHeld(ctx context.Context, s *stream, principal string, now time.Time) {
	var due []token.Claims
	s.mu.Lock()
	for _, h := range s.held {
		if h.claims.Deadline.Sub(now) <= c.extendLead(h.claims.Delivered) && now.Sub(h.started) < c.maxLease {
			due = append(due, h.claims)
		}
	}
	s.mu.Unlock()
	if len(due) == 0 {
		return
	}
	for i, o := range c.settle(ctx, lease.OpExtend, due, settle.Args{Principal: principal}, issued) {
		if o.Err != nil {
			continue // settled meanwhile, or NATS is away: the deadline stands
		}
		s.mu.Lock()
		if h, ok := s.held[due[i].StreamSeq]; ok && h.claims.Delivered == due[i].Delivered {
			h.claims.Deadline = o.Deadline
			h.d.Deadline = o.Deadline
		}
		s.mu.Unlock()
	}
}

// endStream lets go of the stream's leases. When its caller left (ctx
// ended), they are given back: to be nak'ed once the stream's last pull has
// ended (while open, it would take a nak'ed message straight back), so that
// they are redelivered at once rather than after ack_wait. When the stream
// ended for another reason (NATS went away), the caller may still be
// working on them: they stay its own until their deadlines.
func (c *Consumer) endStream(s *stream, callerLeft bool, last *pull.Pull) {
	s.mu.Lock()
	var seqs []uint64
	var ds []*Delivery
	for seq, h := range s.held {
		seqs = append(seqs, seq)
		ds = append(ds, h.d)
	}
	s.held = map[uint64]*heldLease{}
	s.mu.Unlock()
	c.streams.forget(s, seqs)
	if len(ds) > 0 && callerLeft {
		c.returned.Add(float64(len(ds)))
		c.orphans.giveBack(ds, last, time.Now())
	}
}
