package replica

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
	"github.com/jetgate/jetgate/internal/tracing"
)

// maxForwardsInFlight bounds the forwarded settles a replica runs at once.
// Past it, a forward is answered UNAVAILABLE at once, and the caller may
// retry.
const maxForwardsInFlight = 64

// forwarder settles leases: those this replica issued itself, and those of
// other replicas by forwarding them to their issuer (or adopting them, the
// issuer gone); and it serves the settles other replicas forward to it.
type forwarder struct {
	*env
	binder *binder
	relay  *relay // caught up with before a settle, after a pause (wake.go)
	sender *settle.Sender
	slots  chan struct{}      // one per forwarded settle being served
	sub    *nats.Subscription // this replica's forward subject
}

// subscribe takes the settles forwarded to this replica.
func (fw *forwarder) subscribe() error {
	sub, err := fw.nc.Subscribe(settle.Subject(fw.self), fw.onForward)
	if err != nil {
		return fmt.Errorf("subscribe to %s: %w", settle.Subject(fw.self), err)
	}
	fw.sub = sub
	return nil
}

// Settle settles each token's lease and returns one outcome per token, in
// order. Leases this replica issued are settled here; the others are
// forwarded to their issuer, or settled from the token alone when the
// issuer is gone. A token given twice is settled once; both copies get its
// outcome.
func (fw *forwarder) Settle(ctx context.Context, req settle.Request) ([]settle.Outcome, error) {
	if fw.closing.Load() {
		return nil, errStopping
	}
	c, done, err := fw.binder.consumer(ctx, req.Stream, req.Consumer)
	if err != nil {
		return nil, err
	}
	defer done()
	if err := fw.relay.catchUp(ctx); err != nil {
		return nil, err
	}
	if !fw.nc.IsConnected() {
		return nil, fmt.Errorf("%w: not connected to NATS", errs.ErrUnavailable)
	}
	var span *tracing.Span // nil: tracing off
	if fw.spans != nil {
		span = fw.spans.Settle(ctx, req.Op.String(), req.Stream, req.Consumer)
	}
	out := settle.Split(fw.keys, fw.self, req, func(issuer token.IssuerID, b *settle.Batch) []settle.Outcome {
		if issuer == fw.self {
			if span != nil {
				span.Link(len(req.Tokens), c.Origins(b.Claims))
			}
			return c.Settle(ctx, req.Op, b.Claims, req.Args())
		}
		return fw.forward(ctx, c, issuer, b, req)
	})
	c.Counts().CountSettles(req.Op, out)
	if span != nil {
		n, all := failures(out)
		span.Failed(n)
		span.End(all)
	}
	return out, nil
}

// forward settles b, another issuer's leases: a token whose message this
// replica holds a later delivery of (the consumer was reset since it was
// issued) is refused here, LEASE_EXPIRED; the rest go to the issuer.
func (fw *forwarder) forward(ctx context.Context, c *consumer.Consumer, issuer token.IssuerID, b *settle.Batch, req settle.Request) []settle.Outcome {
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
		for j, o := range fw.forwardBatch(ctx, c, issuer, &rest, req) {
			out[rest.Index[j]] = o
		}
	}
	return out
}

// forwardBatch asks the issuer to settle b. When no issuer answers (it
// crashed or restarted), the tokens alone are acted on: their signature and
// deadline are already checked, the ledger is consulted, and the settle
// goes to the rebuilt ack subject.
func (fw *forwarder) forwardBatch(ctx context.Context, c *consumer.Consumer, issuer token.IssuerID, b *settle.Batch, req settle.Request) []settle.Outcome {
	req.Tokens = b.Tokens
	out, err := fw.sender.SendForward(ctx, fw.keys, issuer, settle.Forward{Request: req})
	switch {
	case errors.Is(err, settle.ErrIssuerGone):
		fw.metrics.forwards.WithLabelValues("issuer_gone").Inc()
		return c.Adopt(ctx, req.Op, b.Claims, req.Args())
	case err != nil:
		fw.metrics.forwards.WithLabelValues("error").Inc()
		return settle.Fill(make([]settle.Outcome, len(b.Claims)), err)
	}
	fw.metrics.forwards.WithLabelValues("ok").Inc()
	return out
}

// onForward takes a settle forwarded by another replica. It runs the settle
// on its own goroutine, at most maxForwardsInFlight at once, so that one
// slow batch does not hold up the next.
func (fw *forwarder) onForward(m *nats.Msg) {
	f, err := settle.DecodeForward(fw.keys, m, time.Now())
	if errors.Is(err, errs.ErrInvalidArgument) {
		fw.log.Warn("refused a malformed forwarded settle", "err", err)
		fw.answerForward(m, f, settle.Fill(make([]settle.Outcome, len(f.Tokens)), err))
		return
	}
	if err != nil {
		// Not from a replica of this deployment: not answered, so that it
		// learns nothing.
		fw.metrics.forwards.WithLabelValues("forged").Inc()
		return
	}
	// Shutting down, the replica answers ISSUER_GONE: every settle of its
	// own is done, so the caller may act on the tokens alone, at once rather
	// than after a timeout.
	select {
	case fw.slots <- struct{}{}:
	default:
		err := fmt.Errorf("%w: the issuing replica is busy", errs.ErrUnavailable)
		if fw.run.Closed() {
			err = errs.ErrIssuerGone
		}
		fw.answerForward(m, f, settle.Fill(make([]settle.Outcome, len(f.Tokens)), err))
		return
	}
	if !fw.run.Go(func() {
		defer func() { <-fw.slots }()
		fw.answerForward(m, f, fw.serveForward(f))
	}) {
		<-fw.slots
		fw.answerForward(m, f, settle.Fill(make([]settle.Outcome, len(f.Tokens)), errs.ErrIssuerGone))
	}
}

func (fw *forwarder) answerForward(m *nats.Msg, f settle.Forward, out []settle.Outcome) {
	if err := settle.Reply(fw.keys, m, f, out); err != nil {
		fw.log.Warn("could not answer a forwarded settle", "err", err)
	}
}

// serveForward settles a forwarded batch: only leases this replica issued;
// a token another replica issued is not this replica's to act on.
func (fw *forwarder) serveForward(f settle.Forward) []settle.Outcome {
	ctx, cancel := context.WithTimeout(context.Background(), fw.timeout)
	defer cancel()
	c, done, err := fw.binder.consumer(ctx, f.Stream, f.Consumer)
	if err != nil {
		return settle.Fill(make([]settle.Outcome, len(f.Tokens)), err)
	}
	defer done()
	if err := fw.relay.catchUp(ctx); err != nil {
		return settle.Fill(make([]settle.Outcome, len(f.Tokens)), err)
	}
	return settle.Split(fw.keys, fw.self, f.Request, func(issuer token.IssuerID, b *settle.Batch) []settle.Outcome {
		if issuer == fw.self {
			return c.Settle(ctx, f.Op, b.Claims, f.Args())
		}
		return settle.Fill(make([]settle.Outcome, len(b.Claims)), errs.ErrLeaseExpired)
	})
}

// stop takes the replica off its forward subject. The subscription
// is drained, not just dropped: a forward the server routes here until it
// has taken the interest away is still answered (ISSUER_GONE, the replica
// being closed), rather than left to time out while the caller waits; once
// the interest is gone, a forward gets no responders at once.
func (fw *forwarder) stop(ctx context.Context) {
	if fw.sub == nil {
		return
	}
	closed := fw.sub.StatusChanged(nats.SubscriptionClosed)
	if err := fw.sub.Drain(); err != nil {
		_ = fw.sub.Unsubscribe()
		return
	}
	select {
	case <-closed:
	case <-ctx.Done():
	}
}

// close closes the sender, once the consumers no longer send.
func (fw *forwarder) close() {
	if fw.sender != nil {
		_ = fw.sender.Close()
	}
}
