package consumer

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// A Term whose answer never came (NATS stopped or the connection dropped
// while it was out) may have been applied: nats-server queues its answer
// and then its MSG_TERMINATED advisory, and drops both as it stops. Applied
// so, the message is never redelivered, and with no answer and no advisory
// it would have no dead letter. So the replica sends such a Term again
// itself, as soon as NATS is back and while its lease lasts: the server
// answers a Term of a message it no longer holds as it answers the first,
// and the answer is what records the dead letter (Deps.Terminated). Before
// the lease's deadline the server has redelivered nothing, so the second
// Term cannot land on another holder's delivery; past it, the Term is
// LEASE_EXPIRED and given up. The caller's own retry meanwhile is answered
// as the settle in flight before it (lease.Table.Begin).

// unsureTerm is a Term sent whose outcome is unknown.
type unsureTerm struct {
	cl   token.Claims
	args settle.Args
	w    settle.Whose
}

// unsureTerms are the Terms a consumer sends again.
type unsureTerms struct {
	mu    sync.Mutex
	terms []unsureTerm
}

// add keeps the Terms of cs to be sent again, each delivery once.
func (u *unsureTerms) add(cs []token.Claims, args settle.Args, w settle.Whose) {
	if len(cs) == 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, cl := range cs {
		if !slices.ContainsFunc(u.terms, func(t unsureTerm) bool { return ref(t.cl) == ref(cl) }) {
			u.terms = append(u.terms, unsureTerm{cl, args, w})
		}
	}
}

// take returns the Terms kept, and keeps none.
func (u *unsureTerms) take() []unsureTerm {
	u.mu.Lock()
	defer u.mu.Unlock()
	ts := u.terms
	u.terms = nil
	return ts
}

// retryTerms sends again each Term whose answer never came, one at a time
// (each has its own args), and keeps those NATS could not take yet: not
// connected, or unanswered again.
func (s *settler) retryTerms(ctx context.Context) {
	ts := s.unsure.take()
	if len(ts) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.server.timeout)
	defer cancel()
	for i, t := range ts {
		if ctx.Err() != nil {
			for _, t := range ts[i:] {
				s.unsure.add([]token.Claims{t.cl}, t.args, t.w)
			}
			return
		}
		err := s.settle(ctx, lease.OpTerm, []token.Claims{t.cl}, t.args, t.w)[0].Err
		switch {
		case err == nil, errors.Is(err, settle.ErrUnconfirmed): // sent, or settle kept it again
		case errors.Is(err, errs.ErrUnavailable), errors.Is(err, errs.ErrSettleInProgress):
			s.unsure.add([]token.Claims{t.cl}, t.args, t.w)
		default:
			s.log.Warn("a Term whose answer was lost could not be sent again: if the server applied it, its message has no dead letter",
				"stream_seq", t.cl.StreamSeq, "err", err)
		}
	}
}
