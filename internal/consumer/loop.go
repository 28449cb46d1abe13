package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/pull"
)

// deadlineSlack is kept from the caller's own deadline so that the answer
// can reach it in time.
const deadlineSlack = 50 * time.Millisecond

// pullLimits bound one run of the pull loop.
type pullLimits struct {
	batch     int       // messages at most
	maxBytes  int64     // bytes at most, within the gateway's bound
	until     time.Time // no pull waits past it
	principal string    // whose tokens the messages get
	priority  pull.Priority
	// waitBatch is what a pull asks for when it has to wait in the
	// server's queue behind others (where a no_wait pull is refused): a
	// Fetch asks for one, which ends its pull the moment it comes; a
	// Consume stream, which passes messages on as they come, for its room.
	waitBatch int
}

// limits are the loop's limits for a caller's batch, bytes and expiry:
// maxBytes within the gateway's bound, and the wait within the server's
// max_request_expires and, less deadlineSlack, the caller's own deadline.
func (c *Consumer) limits(ctx context.Context, batch int, maxBytes int64, expires time.Duration, principal string) pullLimits {
	now := time.Now()
	if dl, ok := ctx.Deadline(); ok {
		expires = max(min(expires, dl.Sub(now)-deadlineSlack), 0)
	}
	server := c.server.load().limits
	if server.maxExpires > 0 {
		expires = min(expires, server.maxExpires)
	}
	lim := pullLimits{batch: batch, maxBytes: c.maxFetchBytes, until: now.Add(expires), principal: principal, waitBatch: batch}
	if maxBytes > 0 {
		lim.maxBytes = min(lim.maxBytes, maxBytes)
	}
	if server.maxBytes > 0 {
		lim.maxBytes = min(lim.maxBytes, server.maxBytes)
	}
	return lim
}

// A sink takes what the pull loop leases: a Fetch's collects one answer, a
// Consume stream's passes each burst on.
type sink interface {
	// pause is when an open pull's messages go on: once none has come for
	// gap, or the first has waited linger.
	pause() (gap, linger time.Duration)
	// take gets leased deliveries, orphans or a pull's; open says that the
	// pull they came from is still open. done, or an error, ends the loop.
	take(ctx context.Context, ds []*Delivery, open bool) (done bool, err error)
}

// pullLoop is the one pull cycle of Fetch and Consume: the orphans of
// canceled Fetches first; else a place among the replica's waiting pulls (in
// line if all are taken, then the orphans again), a pull, its messages to s
// as they come, and its end classified; again while the end says to and
// time is left. It returns why nothing came (EmptyNone when something did
// or the end does not say), and the pull it left open to the orphan pool.
func (c *Consumer) pullLoop(ctx context.Context, lim pullLimits, s sink) (EmptyReason, *pull.Pull, error) {
	arrivals := c.orphans.arrivals() // before looking: what comes after wakes the wait
	if took, err := c.takeOrphans(ctx, lim, s); took || err != nil {
		return EmptyNone, nil, err
	}
	if !c.nc.IsConnected() {
		return EmptyNone, nil, fmt.Errorf("%w: not connected", errs.ErrUnavailable)
	}
	send := c.pullNow
	for {
		c.growWaiting(ctx)
		ok, waited := c.waiting.acquire(ctx, lim.until)
		if !ok {
			// Past its expiry in line: a message would have ended the pull
			// of a caller ahead of it.
			return EmptyNone, nil, ctx.Err()
		}
		if waited {
			arrivals = c.orphans.arrivals()
			if took, err := c.takeOrphans(ctx, lim, s); took || err != nil {
				c.waiting.release()
				return EmptyNone, nil, err
			}
		}
		p, err := send(lim)
		if err != nil {
			return EmptyNone, nil, err
		}
		end := c.read(ctx, p, lim, s, arrivals)
		if !end.retry || time.Until(lim.until) < pull.ImmediateExpiry {
			return end.empty, end.left, end.err
		}
		// Other pulls wait for more than is pending (the consumer is at
		// max_ack_pending), so a no_wait pull is refused at once: wait in
		// line with a plain pull instead.
		if end.queued {
			send = c.pullInLine
		}
	}
}

// pullNow sends a no_wait pull: what is available now, no more than
// max_ack_pending leaves room for (one cut short there is held open by the
// server until its next heartbeat).
func (c *Consumer) pullNow(lim pullLimits) (*pull.Pull, error) {
	batch := lim.batch
	if room := c.server.load().limits.maxAckPending - c.leases.Live(); room > 0 && room < batch {
		batch = room
	}
	req := c.pullRequest(batch, lim)
	req.NoWait = true
	return c.startPull(req)
}

// pullInLine sends a pull that waits in the server's queue for
// lim.waitBatch.
func (c *Consumer) pullInLine(lim pullLimits) (*pull.Pull, error) {
	return c.startPull(c.pullRequest(lim.waitBatch, lim))
}

func (c *Consumer) pullRequest(batch int, lim pullLimits) pull.Request {
	if most := c.server.load().limits.maxBatch; most > 0 {
		batch = min(batch, most)
	}
	return pull.NewRequest(batch, time.Until(lim.until), lim.maxBytes, lim.priority)
}

// startPull sends req; every pull request starts here. Its place is given
// back when the pull ends, or at once if it could not start.
func (c *Consumer) startPull(req pull.Request) (*pull.Pull, error) {
	mark := c.resets.mark() // before the server can deliver to it
	p, err := pull.Start(c.nc, c.next, req, c.waiting.release)
	if err != nil {
		c.waiting.release()
		return nil, err
	}
	p.Mark = mark
	return p, nil
}

// pullEnd is how one pull went for the loop.
type pullEnd struct {
	empty  EmptyReason
	left   *pull.Pull // left open to the orphan pool
	err    error
	retry  bool // pull again
	queued bool // refused as no_wait behind other pulls: pull again, plainly
}

// read passes the pull's messages to s as they come, and the orphans that
// come while s has none of them yet, until the pull ends, s is done, or the
// caller leaves; an open pull it stops reading goes to the orphan pool.
func (c *Consumer) read(ctx context.Context, p *pull.Pull, lim pullLimits, s sink, arrivals <-chan struct{}) pullEnd {
	reconnects := c.nc.Stats().Reconnects
	gap, linger := s.pause()
	got := false
	for {
		other := arrivals
		if got {
			other = nil
		}
		msgs, ended, err := p.Next(ctx, gap, linger, other)
		switch {
		case !ended && err != nil:
			c.orphans.abandon(p, time.Now())
			empty, err := c.lost(ctx, err, reconnects)
			return pullEnd{empty: empty, left: p, err: err}
		case !ended && len(msgs) == 0:
			// Orphans came while this pull waited (a canceled Fetch's pull
			// took a message): take them, and leave this pull to the pool.
			arrivals = c.orphans.arrivals()
			if took, err := c.takeOrphans(ctx, lim, s); took || err != nil {
				c.orphans.abandon(p, time.Now())
				return pullEnd{left: p, err: err}
			}
			continue
		}
		if ds := c.receiveAll(p, msgs); len(ds) > 0 {
			got = true
			if err := c.held.wait(ctx); err != nil {
				// The caller left while a reset's word held them back.
				left := p
				if ended {
					left = nil
				} else {
					c.orphans.abandon(p, time.Now())
				}
				c.orphans.keep(ds, left, time.Now())
				return pullEnd{left: left, err: err}
			}
			done, err := s.take(ctx, c.tokens.issue(ds, lim.principal), !ended)
			if (done || err != nil) && !ended {
				c.orphans.abandon(p, time.Now())
				return pullEnd{left: p, err: err}
			}
			if done || err != nil {
				return pullEnd{err: err}
			}
		}
		switch {
		case !ended:
			continue
		case got:
			return pullEnd{}
		}
		return c.ending(ctx, err, lim.maxBytes)
	}
}

// takeOrphans leases up to lim's batch and bytes of orphans to s, if any are
// held; took reports that it did.
func (c *Consumer) takeOrphans(ctx context.Context, lim pullLimits, s sink) (took bool, err error) {
	held := c.orphans.take(lim.batch, lim.maxBytes, time.Now())
	if len(held) == 0 {
		return false, nil
	}
	if err := ctx.Err(); err != nil {
		c.orphans.putBack(held)
		return false, err
	}
	ds := make([]*Delivery, len(held))
	for i, o := range held {
		ds[i] = o.d
	}
	if err := c.held.wait(ctx); err != nil {
		c.orphans.putBack(held)
		return false, err
	}
	c.counts.Orphans[OrphanHanded].Add(uint64(len(ds)))
	_, err = s.take(ctx, c.tokens.issue(ds, lim.principal), false)
	return true, err
}

// lost says what a pull the caller left, or the server went silent on,
// means. Silent: lost with the server when the connection went and came
// back meanwhile or the server does not answer now (UNAVAILABLE); else the
// server dropped it past max_waiting, which it does without a word to a
// pull that asks for heartbeats (clients outside jetgate hold the places).
func (c *Consumer) lost(ctx context.Context, err error, reconnects uint64) (EmptyReason, error) {
	if !errors.Is(err, jetstream.ErrNoHeartbeat) {
		return EmptyNone, err
	}
	if c.nc.Stats().Reconnects != reconnects || !c.nc.IsConnected() || !c.server.answers(ctx) {
		return EmptyNone, fmt.Errorf("%w: the pull was lost with the NATS server", errs.ErrUnavailable)
	}
	return EmptyMaxWaiting, nil
}

// ending says what the status that ended a pull with nothing for its caller
// means: why it is empty (EmptyNone when emptyReason must tell), whether to
// pull again, or an error.
func (c *Consumer) ending(ctx context.Context, err error, maxBytes int64) pullEnd {
	switch {
	case err == nil, errors.Is(err, jetstream.ErrNoMessages), errors.Is(err, jetstream.ErrBatchCompleted):
		return pullEnd{}
	case errors.Is(err, pull.ErrRequestsPending):
		return pullEnd{retry: true, queued: true}
	case errors.Is(err, jetstream.ErrConsumerLeadershipChanged):
		return pullEnd{retry: true}
	case errors.Is(err, jetstream.ErrConsumerDeleted):
		return pullEnd{err: c.server.deleted()}
	case errors.Is(err, jetstream.ErrMaxBytesExceeded) && maxBytes < c.maxFetchBytes:
		return pullEnd{empty: EmptyMaxBytes} // the caller's own max_bytes
	case errors.Is(err, jetstream.ErrMaxBytesExceeded):
		return pullEnd{err: fmt.Errorf("%w: the next message is larger than the %d bytes one Fetch may return (the gateway's max fetch bytes); raise that limit to receive it",
			errs.ErrMessageTooLarge, c.maxFetchBytes)}
	case errors.Is(err, pull.ErrExceededMaxWaiting):
		return pullEnd{empty: EmptyMaxWaiting}
	case errors.Is(err, jetstream.ErrPinIDMismatch):
		return pullEnd{err: fmt.Errorf("%w: the priority group is pinned to another client; pull without pin_id to wait for the pin, or Unpin the group",
			errs.ErrPinIDMismatch)}
	case errors.Is(err, jetstream.ErrServerShutdown):
		return pullEnd{err: fmt.Errorf("%w: the server is shutting down", errs.ErrUnavailable)}
	case errors.Is(err, nats.ErrNoResponders):
		return pullEnd{err: c.server.noResponders(ctx)}
	}
	// A limit of the consumer's (max_batch, max_expires, max_bytes) or a
	// status unknown.
	c.log.Error("the server refused a pull request", "err", err)
	return pullEnd{err: fmt.Errorf("%w: %v", errs.ErrPullRefused, err)}
}
