package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// SettleRequest is a validated Ack, Nak, Term or Extend.
type SettleRequest struct {
	Op        SettleOp
	Tokens    []string
	Delay     time.Duration // Nak
	Reason    string        // Term
	Principal string
}

func (r SettleRequest) args() settleArgs {
	return settleArgs{delay: r.Delay, reason: r.Reason, principal: r.Principal}
}

// Settle settles each token's lease and returns one outcome per token, in
// order. Leases this gateway issued are settled here; the others are
// forwarded to their issuer, or settled from the token alone when the issuer
// is gone.
func (g *Gateway) Settle(ctx context.Context, stream, consumer string, r SettleRequest) ([]Outcome, error) {
	b, err := g.binding(stream, consumer)
	if err != nil {
		return nil, err
	}
	if !g.nc.IsConnected() {
		return nil, fmt.Errorf("%w: not connected to NATS", ErrUnavailable)
	}
	out := make([]Outcome, len(r.Tokens))
	var local []claims
	var localIdx []int
	remote := make(map[GatewayID]*forwardGroup)
	for i, tok := range r.Tokens {
		c, err := g.keys.open(tok, stream, consumer, r.Principal)
		switch {
		case err != nil:
			out[i].Err = err
		case c.issuer == g.self:
			local = append(local, c)
			localIdx = append(localIdx, i)
		default:
			fg := remote[c.issuer]
			if fg == nil {
				fg = &forwardGroup{}
				remote[c.issuer] = fg
			}
			fg.claims = append(fg.claims, c)
			fg.tokens = append(fg.tokens, tok)
			fg.idx = append(fg.idx, i)
		}
	}
	var wg sync.WaitGroup
	for issuer, fg := range remote {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j, o := range g.forward(ctx, b, issuer, fg, r) {
				out[fg.idx[j]] = o
			}
		}()
	}
	if len(local) > 0 {
		for j, o := range b.settleLocal(ctx, r.Op, local, r.args()) {
			out[localIdx[j]] = o
		}
	}
	wg.Wait()
	g.metrics.settled(b, r.Op, out)
	return out, nil
}

// forwardGroup is the part of a settle whose leases one other replica holds.
type forwardGroup struct {
	claims []claims
	tokens []string
	idx    []int
}

// forwardRequest is what one replica asks of the issuer of a lease.
type forwardRequest struct {
	Op        SettleOp      `json:"op"`
	Stream    string        `json:"stream"`
	Consumer  string        `json:"consumer"`
	Tokens    []string      `json:"tokens"`
	Delay     time.Duration `json:"delay,omitempty"`
	Reason    string        `json:"reason,omitempty"`
	Principal string        `json:"principal,omitempty"`
}

type forwardReply struct {
	Outcomes []wireOutcome `json:"outcomes"`
}

type wireOutcome struct {
	Reason   string `json:"reason,omitempty"` // "" is success
	NewToken string `json:"new_token,omitempty"`
	Deadline int64  `json:"deadline_ms,omitempty"`
}

func forwardSubject(id GatewayID) string { return "_JETGATE.SETTLE." + id.String() }

// forward asks the issuer to settle fg. When no issuer answers (it crashed
// or restarted), the tokens alone are acted on: their signature and deadline
// are already checked, and the settle goes to the rebuilt ack subject.
func (g *Gateway) forward(ctx context.Context, b *binding, issuer GatewayID, fg *forwardGroup, r SettleRequest) []Outcome {
	out := make([]Outcome, len(fg.claims))
	body, err := json.Marshal(forwardRequest{
		Op: r.Op, Stream: b.stream, Consumer: b.consumer, Tokens: fg.tokens,
		Delay: r.Delay, Reason: r.Reason, Principal: r.Principal,
	})
	if err != nil {
		return fillOutcomes(out, err)
	}
	fctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	m, err := g.nc.RequestWithContext(fctx, forwardSubject(issuer), body)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		g.metrics.forwards.WithLabelValues("issuer_gone").Inc()
		for _, c := range fg.claims {
			b.leases.adopt(c, ackSubject(b.stream, b.consumer, c))
		}
		return b.settleLocal(ctx, r.Op, fg.claims, r.args())
	case err != nil:
		g.metrics.forwards.WithLabelValues("error").Inc()
		if ctx.Err() != nil {
			return fillOutcomes(out, ctx.Err())
		}
		return fillOutcomes(out, fmt.Errorf("%w: forward to issuer %s: %v", ErrUnavailable, issuer, err))
	}
	g.metrics.forwards.WithLabelValues("ok").Inc()
	var rep forwardReply
	if err := json.Unmarshal(m.Data, &rep); err != nil || len(rep.Outcomes) != len(out) {
		return fillOutcomes(out, fmt.Errorf("%w: malformed reply from issuer %s", ErrUnavailable, issuer))
	}
	for i, w := range rep.Outcomes {
		out[i].Err = errorOfReason(w.Reason)
		out[i].NewToken = w.NewToken
		if w.Deadline != 0 {
			out[i].Deadline = time.UnixMilli(w.Deadline)
		}
	}
	return out
}

func fillOutcomes(out []Outcome, err error) []Outcome {
	for i := range out {
		out[i].Err = err
	}
	return out
}

// onForward takes a settle forwarded by another replica. It runs the settle
// on its own goroutine so that one slow batch does not hold up the next.
func (g *Gateway) onForward(m *nats.Msg) {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.wg.Add(1)
	g.mu.Unlock()
	go func() {
		defer g.wg.Done()
		rep := g.serveForward(m.Data)
		body, err := json.Marshal(rep)
		if err == nil {
			err = m.Respond(body)
		}
		if err != nil {
			g.log.Warn("could not answer a forwarded settle", "err", err)
		}
	}()
}

func (g *Gateway) serveForward(data []byte) forwardReply {
	var req forwardRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return forwardReply{}
	}
	rep := forwardReply{Outcomes: make([]wireOutcome, len(req.Tokens))}
	b, err := g.binding(req.Stream, req.Consumer)
	if err != nil {
		for i := range rep.Outcomes {
			rep.Outcomes[i].Reason = reasonOf(err)
		}
		return rep
	}
	var cs []claims
	var idx []int
	for i, tok := range req.Tokens {
		c, err := g.keys.open(tok, req.Stream, req.Consumer, req.Principal)
		switch {
		case err != nil:
			rep.Outcomes[i].Reason = reasonOf(err)
		case c.issuer != g.self:
			rep.Outcomes[i].Reason = reasonOf(ErrLeaseExpired)
		default:
			cs = append(cs, c)
			idx = append(idx, i)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	for j, o := range b.settleLocal(ctx, req.Op, cs, settleArgs{delay: req.Delay, reason: req.Reason, principal: req.Principal}) {
		w := &rep.Outcomes[idx[j]]
		if o.Err != nil {
			w.Reason = reasonOf(o.Err)
			continue
		}
		w.NewToken = o.NewToken
		if !o.Deadline.IsZero() {
			w.Deadline = o.Deadline.UnixMilli()
		}
	}
	return rep
}
