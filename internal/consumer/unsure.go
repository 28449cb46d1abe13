package consumer

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

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
// answers a Term of a message it no longer holds as it answers the first
// (and advises it again), and the answer records the dead letter
// (Deps.Terminated); they make one letter, by its id. Before
// the lease's deadline the server has redelivered nothing, so the second
// Term cannot land on another holder's delivery; past it, the Term is
// LEASE_EXPIRED and given up. The caller's own retry meanwhile is answered
// as the settle in flight before it (lease.Table.Begin).

// unsureTerm is a Term sent whose outcome is unknown.
type unsureTerm struct {
	cl   token.Claims
	args settle.Args
}

// unsureKey names one delivery of a message, whatever its token's deadline
// (an Extend's token names the same one).
type unsureKey struct{ streamSeq, delivered uint64 }

// unsureTerms are the Terms a consumer sends again, on a goroutine of
// their own (a Term the server leaves unanswered would hold Run's timers
// for a request timeout a try).
type unsureTerms struct {
	mu      sync.Mutex
	terms   map[unsureKey]unsureTerm
	sending int            // taken to be sent again, not sent yet
	running atomic.Bool    // a goroutine sends them
	wg      sync.WaitGroup // that goroutine
}

// add keeps the Term of cl to be sent again, once per delivery.
func (u *unsureTerms) add(cl token.Claims, args settle.Args) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.terms == nil {
		u.terms = make(map[unsureKey]unsureTerm)
	}
	u.terms[unsureKey{cl.StreamSeq, cl.Delivered}] = unsureTerm{cl, args}
}

// take returns the Terms kept, and keeps none; each is counted as being
// sent until sent tells of it.
func (u *unsureTerms) take() []unsureTerm {
	u.mu.Lock()
	defer u.mu.Unlock()
	ts := make([]unsureTerm, 0, len(u.terms))
	for _, t := range u.terms {
		ts = append(ts, t)
	}
	clear(u.terms)
	u.sending += len(ts)
	return ts
}

// sent tells that n of the Terms taken were sent again (or kept again).
func (u *unsureTerms) sent(n int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.sending -= n
}

// count is how many Terms are kept or being sent again.
func (u *unsureTerms) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.terms) + u.sending
}

// any reports whether Terms are kept.
func (u *unsureTerms) any() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.terms) > 0
}

// UnsureTerms counts the Terms sent whose answer never came, to be sent
// again while their leases last (unsure.go).
func (c *Consumer) UnsureTerms() int { return c.settler.unsure.count() }

// retryUnsure starts sending the kept Terms again, unless a goroutine does
// already; Run waits for it (unsure.wg) before it returns.
func (s *settler) retryUnsure(ctx context.Context) {
	if !s.unsure.any() || !s.unsure.running.CompareAndSwap(false, true) {
		return
	}
	s.unsure.wg.Go(func() {
		defer s.unsure.running.Store(false)
		s.retryTerms(ctx)
	})
}

// retryTerms sends again each Term whose answer never came, one at a time
// (each has its own args), and keeps those NATS could not take yet (not
// connected, or unanswered again) and those another settle of the lease
// held up (SETTLE_IN_PROGRESS). Each consults the ledger as a Term of an
// adopted lease does, though this replica issued it: the caller, told
// NATS_UNAVAILABLE, may have settled its token otherwise meanwhile through
// another replica that took this one for gone (a Nak, whose redelivery
// this Term would land on; an Ack), and that settle's claim then refuses
// it.
func (s *settler) retryTerms(ctx context.Context) {
	ts := s.unsure.take()
	ctx, cancel := context.WithTimeout(ctx, s.server.timeout)
	defer cancel()
	for i, t := range ts {
		if ctx.Err() != nil {
			for _, t := range ts[i:] {
				s.unsure.add(t.cl, t.args)
			}
			s.unsure.sent(len(ts) - i)
			return
		}
		err := s.settle(ctx, lease.OpTerm, []token.Claims{t.cl}, t.args, settle.Adopted)[0].Err
		switch {
		case err == nil, errors.Is(err, settle.ErrUnconfirmed): // sent, or settle kept it again
		case errors.Is(err, errs.ErrUnavailable), errors.Is(err, errs.ErrSettleInProgress):
			s.unsure.add(t.cl, t.args)
		default:
			s.log.Warn("a Term whose answer was lost could not be sent again: if the server applied it, its message has no dead letter",
				"stream_seq", t.cl.StreamSeq, "err", err)
		}
		s.unsure.sent(1)
	}
}

// retryTermsLast sends the Terms kept once more, as the consumer closes,
// and says how many it could not.
func (s *settler) retryTermsLast(ctx context.Context) {
	s.retryTerms(ctx)
	if left := s.unsure.take(); len(left) > 0 {
		s.unsure.sent(len(left)) // given up: counted no more
		s.log.Warn("Terms whose answer was lost could not be sent again as the consumer closed: any the server applied has no dead letter",
			"terms", len(left))
	}
}

// withTermRecords is d with Terminated only for a consumer with
// dead_letter.on_term: no other has a dead letter of its Terms to record,
// nor sends again a Term whose answer never came.
func (d Deps) withTermRecords(cfg Config) Deps {
	if cfg.DeadLetter == nil || !cfg.DeadLetter.OnTerm {
		d.Terminated = nil
	}
	return d
}
