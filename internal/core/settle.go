package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// maxForwardsInFlight bounds the forwarded settles a replica runs at once.
// Past it, a forward is answered UNAVAILABLE at once, and the caller may
// retry.
const maxForwardsInFlight = 64

// Settle settles each token's lease and returns one outcome per token, in
// order. Leases this replica issued are settled here; the others are
// forwarded to their issuer, or settled from the token alone when the
// issuer is gone. A token given twice is settled once; both copies get its
// outcome.
func (r *Replica) Settle(ctx context.Context, req settle.Request) ([]settle.Outcome, error) {
	c, done, err := r.consumer(ctx, req.Stream, req.Consumer)
	if err != nil {
		return nil, err
	}
	defer done()
	if !r.nc.IsConnected() {
		return nil, fmt.Errorf("%w: not connected to NATS", errs.ErrUnavailable)
	}
	span := r.spans.Settle(ctx, req.Op.String(), req.Stream, req.Consumer)
	out := settle.Split(r.keys, r.self, req, func(issuer token.IssuerID, b *settle.Batch) []settle.Outcome {
		if issuer == r.self {
			if span != nil {
				span.Link(len(req.Tokens), c.Origins(b.Claims))
			}
			return c.Settle(ctx, req.Op, b.Claims, req.Args())
		}
		return r.forward(ctx, c, issuer, b, req)
	})
	c.Counts().CountSettles(req.Op, out)
	span.End(nil)
	return out, nil
}

// forward settles b, another issuer's leases: a token whose message this
// replica holds a later delivery of (the consumer was reset since it was
// issued) is refused here, LEASE_EXPIRED; the rest go to the issuer.
func (r *Replica) forward(ctx context.Context, c *consumer.Consumer, issuer token.IssuerID, b *settle.Batch, req settle.Request) []settle.Outcome {
	out := make([]settle.Outcome, len(b.Claims))
	var rest settle.Batch
	for i, stale := range c.Superseded(b.Claims) {
		if stale {
			out[i].Err = errs.ErrLeaseExpired
			continue
		}
		rest.Claims, rest.Tokens, rest.Index = append(rest.Claims, b.Claims[i]), append(rest.Tokens, b.Tokens[i]), append(rest.Index, i)
	}
	if len(rest.Claims) > 0 {
		for j, o := range r.forwardBatch(ctx, c, issuer, &rest, req) {
			out[rest.Index[j]] = o
		}
	}
	return out
}

// forwardBatch asks the issuer to settle b. When no issuer answers (it
// crashed or restarted), the tokens alone are acted on: their signature and
// deadline are already checked, the ledger is consulted, and the settle
// goes to the rebuilt ack subject.
func (r *Replica) forwardBatch(ctx context.Context, c *consumer.Consumer, issuer token.IssuerID, b *settle.Batch, req settle.Request) []settle.Outcome {
	req.Tokens = b.Tokens
	out, err := r.sender.SendForward(ctx, r.keys, issuer, settle.Forward{Request: req})
	switch {
	case errors.Is(err, settle.ErrIssuerGone):
		r.metrics.forwards.WithLabelValues("issuer_gone").Inc()
		return c.Adopt(ctx, req.Op, b.Claims, req.Args())
	case err != nil:
		r.metrics.forwards.WithLabelValues("error").Inc()
		return settle.Fill(make([]settle.Outcome, len(b.Claims)), err)
	}
	r.metrics.forwards.WithLabelValues("ok").Inc()
	return out
}

// onForward takes a settle forwarded by another replica. It runs the settle
// on its own goroutine, at most maxForwardsInFlight at once, so that one
// slow batch does not hold up the next.
func (r *Replica) onForward(m *nats.Msg) {
	f, err := settle.DecodeForward(r.keys, m, time.Now())
	if errors.Is(err, errs.ErrInvalidArgument) {
		r.log.Warn("refused a malformed forwarded settle", "err", err)
		r.answerForward(m, f, settle.Fill(make([]settle.Outcome, len(f.Tokens)), err))
		return
	}
	if err != nil {
		// Not from a replica of this deployment: not answered, so that it
		// learns nothing.
		r.metrics.forwards.WithLabelValues("forged").Inc()
		return
	}
	r.mu.Lock()
	if r.closed {
		// Shutting down: every settle of its own is done, so the caller may
		// act on the tokens alone, at once rather than after a timeout.
		r.mu.Unlock()
		r.answerForward(m, f, settle.Fill(make([]settle.Outcome, len(f.Tokens)), errs.ErrIssuerGone))
		return
	}
	select {
	case r.forwardSlots <- struct{}{}:
	default:
		r.mu.Unlock()
		r.answerForward(m, f, settle.Fill(make([]settle.Outcome, len(f.Tokens)),
			fmt.Errorf("%w: the issuing replica is busy", errs.ErrUnavailable)))
		return
	}
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		defer func() { <-r.forwardSlots }()
		r.answerForward(m, f, r.serveForward(f))
	}()
}

func (r *Replica) answerForward(m *nats.Msg, f settle.Forward, out []settle.Outcome) {
	if err := settle.Reply(r.keys, m, f, out); err != nil {
		r.log.Warn("could not answer a forwarded settle", "err", err)
	}
}

// serveForward settles a forwarded batch: only leases this replica issued;
// a token another replica issued is not this replica's to act on.
func (r *Replica) serveForward(f settle.Forward) []settle.Outcome {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	c, done, err := r.consumer(ctx, f.Stream, f.Consumer)
	if err != nil {
		return settle.Fill(make([]settle.Outcome, len(f.Tokens)), err)
	}
	defer done()
	return settle.Split(r.keys, r.self, f.Request, func(issuer token.IssuerID, b *settle.Batch) []settle.Outcome {
		if issuer == r.self {
			return c.Settle(ctx, f.Op, b.Claims, f.Args())
		}
		return settle.Fill(make([]settle.Outcome, len(b.Claims)), errs.ErrLeaseExpired)
	})
}
