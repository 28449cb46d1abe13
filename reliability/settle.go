package reliability

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// answer settles ms with a and, if Resend says so, sends a settle of them
// again later on a goroutine of its own, counted in resends.
func (d *Driver) answer(ctx context.Context, r *rand.Rand, a Action, ms []*jetgatev1.Message, resends *sync.WaitGroup) {
	confirmed, last := d.settleVia(ctx, r, a, ms, nil, firstSettle)
	if d.Resend == nil {
		return
	}
	again, after, ok := d.Resend(r, a)
	if !ok {
		return
	}
	kind, send := resendSettle, ms
	if again != a {
		kind, send = staleSettle, confirmed
	}
	if len(send) == 0 {
		return
	}
	rr := rand.New(rand.NewPCG(r.Uint64(), r.Uint64()))
	resends.Add(1)
	go func() {
		defer resends.Done()
		backoff(ctx, after)
		d.settleVia(ctx, rr, again, send, last, kind)
	}()
}

// settleVia answers ms with a, retrying what failed for a retryable reason
// (through a random replica each time, the first other than avoid) until
// it succeeds or the lease expires. It returns the messages whose settle
// was confirmed and the client of the last attempt. A stale settle's
// success is not the caller's answer but a failure of the gateway's: it is
// recorded in staleAccepted (and in the checker, which is what the server
// did); its unknown outcomes are retried, not counted as maybe settled.
func (d *Driver) settleVia(ctx context.Context, r *rand.Rand, a Action, ms []*jetgatev1.Message,
	avoid jetgatev1.ConsumerServiceClient, kind settleKind) (confirmed []*jetgatev1.Message, last jetgatev1.ConsumerServiceClient) {
	pending := ms
	for len(pending) > 0 && ctx.Err() == nil {
		tokens := make([]string, len(pending))
		for i, m := range pending {
			tokens[i] = m.GetToken()
		}
		c := pick(r, d.consumers(), avoid)
		if c == nil {
			backoff(ctx, 50*time.Millisecond)
			continue
		}
		avoid, last = nil, c
		if d.Watch != nil {
			d.Watch.Settling(a, pending)
		}
		sctx, cancel := context.WithTimeout(ctx, d.RPCTimeout)
		start := time.Now()
		fails, err := call(sctx, c, d.Stream, d.Consumer, a, tokens)
		cancel()
		if err != nil {
			d.rpcErr(err, time.Since(start))
			if kind != staleSettle {
				d.maybe(a, pending)
			}
			backoff(ctx, 50*time.Millisecond)
			continue
		}
		failed := make(map[int32]string, len(fails))
		for _, f := range fails {
			failed[f.GetIndex()] = f.GetReason()
		}
		var retry []*jetgatev1.Message
		for i, m := range pending {
			reason, bad := failed[int32(i)]
			if !bad {
				reason = "OK"
			}
			d.outcome(kind, a, reason)
			switch {
			case !bad:
				confirmed = append(confirmed, m)
				if sw, ok := d.Watch.(SettleWatcher); ok {
					sw.Settled(a, m)
				}
				if kind == staleSettle {
					d.stale(a, m)
				} else {
					d.settledNow()
				}
				id := string(m.GetData())
				switch a {
				case Ack:
					d.Checker.Acked(id)
				case Term:
					d.Checker.Termed(id)
				}
			case reason == "NATS_UNAVAILABLE" || reason == "ISSUER_UNAVAILABLE" || reason == "SETTLE_IN_PROGRESS":
				if kind != staleSettle {
					d.maybe(a, []*jetgatev1.Message{m})
				}
				retry = append(retry, m)
			}
		}
		pending = retry
		if len(pending) > 0 {
			backoff(ctx, 50*time.Millisecond)
		}
	}
	return confirmed, last
}

// maybe notes acks and terms that may have been applied.
func (d *Driver) maybe(a Action, ms []*jetgatev1.Message) {
	if a != Ack && a != Term {
		return
	}
	for _, m := range ms {
		d.Checker.MaybeSettled(string(m.GetData()))
	}
}

func call(ctx context.Context, c jetgatev1.ConsumerServiceClient, stream, consumer string, a Action, tokens []string) ([]*jetgatev1.TokenFailure, error) {
	switch a {
	case Ack:
		resp, err := c.Ack(ctx, &jetgatev1.AckRequest{Stream: stream, Consumer: consumer, Tokens: tokens})
		return resp.GetFailures(), err
	case Nak, NakDelay:
		req := &jetgatev1.NakRequest{Stream: stream, Consumer: consumer, Tokens: tokens}
		if a == NakDelay {
			req.Delay = durationpb.New(200 * time.Millisecond)
		}
		resp, err := c.Nak(ctx, req)
		return resp.GetFailures(), err
	default:
		resp, err := c.Term(ctx, &jetgatev1.TermRequest{Stream: stream, Consumer: consumer, Tokens: tokens, Reason: "fault suite"})
		return resp.GetFailures(), err
	}
}
