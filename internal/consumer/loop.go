package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/pull"
)

// puller is the replica's pulls on one consumer: its places among the
// consumer's waiting pulls (waiting.go) and the one pull loop that Fetch
// (fetch.go) and Consume (consume.go) drive. It asks the consumer's
// server-side owner whether each delivery may be leased, and settles
// through the settler only a Consume stream's keep-alive extends.
type puller struct {
	nc            *nats.Conn
	next          string                          // where its pulls are sent
	maxFetchBytes int64                           // the gateway's bound on one Fetch
	maxLease      time.Duration                   // how long auto_extend keeps one lease
	traced        bool                            // keep each delivery's creation context
	catchUp       func(ctx context.Context) error // Deps.CatchUp; nil: nothing to catch up with
	log           *slog.Logger

	waiting  *waitingPulls // this replica's places among the consumer's waiting pulls
	replicas atomic.Int64  // replicas serving the consumer, as last told; 0 until then
	grown    atomic.Int64  // unix ns of the last growWaiting that asked the server

	server  *onServer
	settles *settler
	leases  *lease.Table
	tokens  *issuer
	orphans *orphanPool
	counts  *Counts
	wake    func() // the consumer's Run: a place was taken, orphans were left
	// idle counts the open pulls of Consume streams that hold nothing,
	// waiting ConsumeRequest.IdleWait: Run need not attend to those.
	idle atomic.Int64
	// open are its pulls not ended, withdrawn once a reset is noticed
	// (withdraw.go).
	open *openPulls
	// blind is when marks too low last had the server asked (markNow),
	// and in which epoch: one question at a time.
	blind struct {
		sync.Mutex
		epoch uint64
		at    time.Time
	}
}

// abandon leaves p, still open, to the orphan pool, which Run attends to.
func (pl *puller) abandon(p *markedPull) {
	pl.orphans.abandon(*p, time.Now())
	pl.wake()
}

// markedPull is a pull the loop started, with the marks the reset rules
// keep for it (reset.go): held by value, by the loop and then the orphan
// pool, so that a pull costs no allocation of its own.
type markedPull struct {
	*pull.Pull
	mark seqMark
	at   *openPull // its place among the open pulls, and of the replica's places
}

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
	// inLine: the first pull waits in line too (an idle Consume stream's,
	// for one message: a no_wait pull with a long expiry is held by the
	// server as one, but a closing consumer waits for a no_wait pull's end).
	inLine bool
	// An open pull's messages go on once none has come for gap, or the
	// first has waited linger.
	gap, linger time.Duration
}

// MaxFetchBytes is the most bytes one of its pulls asks for: a message
// larger than that is never received.
func (pl *puller) MaxFetchBytes() int64 { return pl.maxFetchBytes }

// limits are the loop's limits for a caller's batch, bytes and expiry:
// maxBytes within the gateway's bound, and the wait within the server's
// max_request_expires and, less deadlineSlack, the caller's own deadline.
func (pl *puller) limits(ctx context.Context, batch int, maxBytes int64, expires time.Duration, principal string) pullLimits {
	now := time.Now()
	if dl, ok := ctx.Deadline(); ok {
		expires = max(min(expires, dl.Sub(now)-deadlineSlack), 0)
	}
	server := requestLimits(pl.server)
	if server.maxExpires > 0 {
		expires = min(expires, server.maxExpires)
	}
	lim := pullLimits{batch: batch, maxBytes: pl.maxFetchBytes, until: now.Add(expires), principal: principal, waitBatch: batch}
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
func (pl *puller) pullLoop(ctx context.Context, lim pullLimits, s sink) (EmptyReason, *pull.Pull, error) {
	took, arrivals, err := pl.takeOrphans(ctx, lim, s)
	if took || err != nil {
		return EmptyNone, nil, err
	}
	if !pl.nc.IsConnected() {
		return EmptyNone, nil, fmt.Errorf("%w: not connected", errs.ErrUnavailable)
	}
	inLine := lim.inLine
	for {
		if !pl.waiting.tryAcquire() {
			pl.growWaiting(ctx)
			if !pl.waiting.acquire(ctx, lim.until) {
				// Past its expiry in line: a message would have ended the
				// pull of a caller ahead of it.
				return EmptyNone, nil, ctx.Err()
			}
			if took, arrivals, err = pl.takeOrphans(ctx, lim, s); took || err != nil {
				pl.waiting.release()
				return EmptyNone, nil, err
			}
		}
		p, err := pl.startPull(ctx, lim, inLine)
		if err != nil {
			return EmptyNone, nil, err
		}
		end := pl.read(ctx, &p, lim, s, arrivals)
		if end.empty == EmptyMaxWaiting && end.err == nil && time.Until(lim.until) >= pull.ImmediateExpiry && pl.crowded(ctx, p.at) {
			continue // in line again, for a place its replica's own pulls hold
		}
		if !end.retry || time.Until(lim.until) < pull.ImmediateExpiry {
			return end.empty, end.left, end.err
		}
		// Other pulls wait for more than is pending (the consumer is at
		// max_ack_pending), so a no_wait pull is refused at once: wait in
		// line with a plain pull instead.
		inLine = inLine || end.queued
	}
}

// startPull sends a pull for lim; every pull request starts here. One in
// line waits in the server's queue for lim.waitBatch; otherwise it is
// no_wait: what is available now, no more than max_ack_pending leaves room
// for (one cut short there is held open by the server until its next
// heartbeat). It is sent once the replica has taken in a reset NATS told it
// of (Deps.CatchUp): a pull marked before would have its deliveries, made
// after the reset, taken to be from before it; and after a reconnect, once
// the consumer's info was asked (current). Its place is given back when
// the pull ends, or at once if it could not start.
func (pl *puller) startPull(ctx context.Context, lim pullLimits, inLine bool) (markedPull, error) {
	if pl.catchUp != nil {
		if err := pl.catchUp(ctx); err != nil {
			pl.waiting.release()
			return markedPull{}, err
		}
	}
	if err := current(ctx, pl.server); err != nil {
		pl.waiting.release()
		return markedPull{}, err
	}
	server := requestLimits(pl.server)
	batch := lim.waitBatch
	if !inLine {
		batch = lim.batch
		if room := server.maxAckPending - pl.leases.Live(); room > 0 && room < batch {
			batch = room
		}
	}
	if server.maxBatch > 0 {
		batch = min(batch, server.maxBatch)
	}
	req := pull.NewRequest(batch, time.Until(lim.until), lim.maxBytes, lim.priority)
	req.NoWait = !inLine
	mark := pl.markNow(ctx, req.Expires > pull.ImmediateExpiry, lim.priority.Priority) // before the server can deliver to it
	at := new(openPull)
	p, err := pull.Start(pl.nc, pl.next, req, func() { pl.freePlace(at); pl.open.remove(at) })
	if err != nil {
		pl.waiting.release()
		return markedPull{}, err
	}
	pl.open.add(at, p, mark.Epoch)
	if pl.server.resets.mark().Epoch != mark.Epoch { // a reset noticed since: withdrawBefore missed it
		p.Withdraw()
	}
	return markedPull{Pull: p, mark: mark, at: at}, nil
}

// caughtUp reports whether the replica has taken in what NATS had sent it
// (Deps.CatchUp).
func (pl *puller) caughtUp(ctx context.Context) bool {
	return pl.catchUp == nil || pl.catchUp(ctx) == nil
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
func (pl *puller) read(ctx context.Context, p *markedPull, lim pullLimits, s sink, arrivals <-chan struct{}) pullEnd {
	reconnects := pl.nc.Stats().Reconnects
	got := false
	for {
		other := arrivals
		if got {
			other = nil
		}
		msgs, ended, err := p.Next(ctx, lim.gap, lim.linger, other)
		switch {
		case !ended && err != nil:
			pl.abandon(p)
			empty, err := pl.lost(ctx, err, reconnects)
			return pullEnd{empty: empty, left: p.Pull, err: err}
		case !ended && len(msgs) == 0:
			// Orphans came while this pull waited (a canceled Fetch's pull
			// took a message): take them, and leave this pull to the pool.
			var took bool
			if took, arrivals, err = pl.takeOrphans(ctx, lim, s); took || err != nil {
				pl.abandon(p)
				return pullEnd{left: p.Pull, err: err}
			}
			continue
		}
		if len(msgs) > 0 {
			// What NATS sent before these (an update request that
			// passed) is taken in before they are dated: the server
			// applied it before it delivered them.
			pl.caughtUp(ctx)
		}
		if ds := pl.receiveAll(&p.mark, msgs); len(ds) > 0 {
			got = true
			pl.orphans.repinned(lim.priority.Group, ds) // spares of a pin gone: Run naks them
			pl.wake()                                   // leases to attend to, from an idle pull too
			if err := pl.server.held.wait(ctx); err != nil {
				// The caller left while a reset's word held them back.
				left := p.Pull
				if ended {
					left = nil
				} else {
					pl.abandon(p)
				}
				pl.orphans.keep(ds, left, time.Now())
				return pullEnd{left: left, err: err}
			}
			done, err := s.take(ctx, pl.tokens.issue(ds, lim.principal), !ended)
			if (done || err != nil) && !ended {
				pl.abandon(p)
				return pullEnd{left: p.Pull, err: err}
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
		if errors.Is(err, jetstream.ErrPinIDMismatch) && pl.orphans.pinRefused(lim.priority.PinID) {
			pl.wake()
		}
		return pl.ending(ctx, err, lim.maxBytes)
	}
}

// takeOrphans leases up to lim's batch and bytes of orphans to s, if any are
// held; took reports that it did. Orphans that come after it looked close
// arrivals.
func (pl *puller) takeOrphans(ctx context.Context, lim pullLimits, s sink) (took bool, arrivals <-chan struct{}, err error) {
	held, arrivals := pl.orphans.take(lim.batch, lim.maxBytes, lim.priority.PinID, time.Now())
	if len(held) == 0 {
		return false, arrivals, nil
	}
	if err := ctx.Err(); err != nil {
		pl.orphans.putBack(held)
		return false, arrivals, err
	}
	ds := make([]*Delivery, len(held))
	for i, o := range held {
		ds[i] = o.d
	}
	if err := pl.server.held.wait(ctx); err != nil {
		pl.orphans.putBack(held)
		return false, arrivals, err
	}
	pl.flushed(ctx) // before they are dated (issuer.dated)
	pl.counts.Orphans[OrphanHanded].Add(uint64(len(ds)))
	_, err = s.take(ctx, pl.tokens.issue(ds, lim.principal), false)
	return true, arrivals, err
}

// lost says what a pull the caller left, or the server went silent on,
// means. Silent: lost with the server when the connection went and came
// back meanwhile or the server does not answer now (UNAVAILABLE); else the
// server dropped it past max_waiting, which it does without a word to a
// pull that asks for heartbeats (clients outside jetgate hold the places).
func (pl *puller) lost(ctx context.Context, err error, reconnects uint64) (EmptyReason, error) {
	if !errors.Is(err, jetstream.ErrNoHeartbeat) {
		return EmptyNone, err
	}
	gone := pl.nc.Stats().Reconnects != reconnects || !pl.nc.IsConnected()
	if !gone {
		_, err := pl.server.ask(context.WithoutCancel(ctx), time.Second)
		gone = err != nil // the server does not answer now
	}
	if gone {
		return EmptyNone, fmt.Errorf("%w: the pull was lost with the NATS server", errs.ErrUnavailable)
	}
	return EmptyMaxWaiting, nil
}

// ending says what the status that ended a pull with nothing for its caller
// means: why it is empty (EmptyNone when emptyReason must tell), whether to
// pull again, or an error.
func (pl *puller) ending(ctx context.Context, err error, maxBytes int64) pullEnd {
	switch {
	case err == nil, errors.Is(err, jetstream.ErrNoMessages), errors.Is(err, jetstream.ErrBatchCompleted):
		return pullEnd{}
	case errors.Is(err, pull.ErrRequestsPending):
		return pullEnd{retry: true, queued: true}
	case errors.Is(err, jetstream.ErrConsumerLeadershipChanged), errors.Is(err, pull.ErrWithdrawn):
		return pullEnd{retry: true}
	case errors.Is(err, jetstream.ErrConsumerDeleted):
		return pullEnd{err: pl.server.deleted()}
	case errors.Is(err, jetstream.ErrMaxBytesExceeded) && consumerBound(pl.server, maxBytes):
		return pullEnd{err: overConsumersBytes(requestLimits(pl.server).maxBytes)}
	case errors.Is(err, jetstream.ErrMaxBytesExceeded) && maxBytes < pl.maxFetchBytes:
		return pullEnd{empty: EmptyMaxBytes} // the caller's own max_bytes
	case errors.Is(err, jetstream.ErrMaxBytesExceeded):
		return pullEnd{err: fmt.Errorf("%w: the next message is larger than the %d bytes one Fetch may return (the gateway's max fetch bytes); raise that limit to receive it",
			errs.ErrMessageTooLarge, pl.maxFetchBytes)}
	case errors.Is(err, pull.ErrExceededMaxWaiting):
		return pullEnd{empty: EmptyMaxWaiting}
	case errors.Is(err, jetstream.ErrPinIDMismatch):
		return pullEnd{err: fmt.Errorf("%w: the pin sent is not the group's now (another client holds it, or it was let go: unpinned, or no pull carried it for the consumer's priority_timeout); pull without pin_id to take the pin when it is free, or Unpin the group",
			errs.ErrPinIDMismatch)}
	case errors.Is(err, jetstream.ErrServerShutdown):
		return pullEnd{err: fmt.Errorf("%w: the server is shutting down", errs.ErrUnavailable)}
	case errors.Is(err, nats.ErrNoResponders):
		return pullEnd{err: pl.server.noResponders(ctx)}
	}
	if limitsRefused(err) {
		// A limit of the consumer's (max_batch, max_expires, max_bytes)
		// lowered since the view was taken: Fetch and Consume ask its info
		// and pull once more, within it.
		pl.log.Warn("the server refused a pull request over a limit of the consumer's, changed since jetgate last asked", "err", err)
	} else {
		pl.log.Error("the server refused a pull request", "err", err)
	}
	return pullEnd{err: fmt.Errorf("%w: %w", errs.ErrPullRefused, err)}
}
