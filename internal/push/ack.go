package push

import (
	"context"
	"errors"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// maxAckBatch bounds the Acks settled at once.
const maxAckBatch = 256

// acks settles the Acks of the pushes the endpoint took, as many at once as
// have come, so that a worker goes on to its next push while the server
// confirms the last. It ends once the workers have and it has sent what
// they gave it.
func (p *Pusher) acks(ctx context.Context) {
	defer close(p.acked)
	for d := range p.toAck {
		batch := []*consumer.Delivery{d}
	more:
		for len(batch) < maxAckBatch {
			select {
			case d, ok := <-p.toAck:
				if !ok {
					break more
				}
				batch = append(batch, d)
			default:
				break more
			}
		}
		p.settle(ctx, lease.OpAck, batch, settle.Args{})
	}
}

// settle settles ds, again while NATS is away, until each is done, refused,
// or its lease is gone. Each counts in jetgate_settles_total once, by its
// last outcome, as a caller's token does (replica's forwarder.Settle); a try
// NATS failed counts in natsFailed instead, so that an outage's alert,
// which reads both, counts it once.
func (p *Pusher) settle(ctx context.Context, op lease.Op, ds []*consumer.Delivery, args settle.Args) {
	for wait := 50 * time.Millisecond; len(ds) > 0; wait = min(wait*2, time.Second) {
		cs := make([]token.Claims, len(ds))
		for i, d := range ds {
			cs[i] = p.c.ClaimsOf(d)
		}
		var again []*consumer.Delivery
		outs := p.c.Settle(ctx, op, cs, args)
		done := outs[:0] // the outcomes not tried again, counted as a caller's are
		for i, o := range outs {
			switch err := o.Err; {
			case err == nil || ctx.Err() != nil:
			case errors.Is(err, errs.ErrUnavailable):
				p.m.natsFailed(op.String()).Inc() // each try, there: not in the settles too
				again = append(again, ds[i])
				continue
			case errors.Is(err, errs.ErrSettleInProgress):
				again = append(again, ds[i])
				continue
			default:
				// Settled otherwise, or the lease is gone (a reset, a deadline
				// missed while NATS was away): the server redelivers.
				p.log.Warn("push answered but not settled", "op", op, "stream_seq", ds[i].Meta.StreamSeq, "err", err)
			}
			done = append(done, o)
		}
		p.c.Counts().CountSettles(op, done)
		if ds = again; len(ds) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// nakDelay is the delay of the Nak after j's own failure (retryDelay).
func (p *Pusher) nakDelay(j *job) time.Duration {
	return p.retryDelay(j.d.Meta.Delivered, j.retryAfter)
}

// retryDelay is the delay of the Nak of a message's delivery after a
// failure, the endpoint having asked for asked (a Retry-After, or a batch
// answer's retry_after; 0: nothing): the retry delay, or asked if longer,
// at most retry.max. What the endpoint asks lengthens the wait, never
// shortens it below the operator's retry.min, so an endpoint answering 0
// cannot spend a message's deliveries at once.
func (p *Pusher) retryDelay(delivered uint64, asked time.Duration) time.Duration {
	return min(max(retryDelay(p.cfg.RetryMin, p.cfg.RetryMax, delivered), asked), p.cfg.RetryMax)
}
