package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/pull"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
	"go.opentelemetry.io/otel/trace"
)

// settler settles the leases of one consumer: those this replica issued
// (Settle), those whose issuer is gone (Adopt), the orphans it gives back
// (nak) and the leases it keeps alive (keepAlive). Each batch runs through
// the lease table, the ledger's verdicts and the sender.
type settler struct {
	stream, name string
	sender       *settle.Sender
	ledger       *settle.Ledger
	log          *slog.Logger
	server       *onServer // the timing, how the server settles, the last reset
	leases       *lease.Table
	tokens       *issuer
	counts       *Counts
	wake         func()                          // the consumer's Run: the table holds adopted leases
	awake        func(ctx context.Context) error // Deps.Awake; nil: nothing to catch up with
	// terminated is Deps.Terminated; nil: no Term is recorded.
	terminated func(ctx context.Context, stream, name, reason string, ds []lease.Ref)
	unsure     unsureTerms // the Terms sent whose answer never came
}

// ref is the delivery a token names: the consumer sequence, start and
// deadline tell it from a delivery of the same message after a consumer
// reset (lease.Ref).
func ref(c token.Claims) lease.Ref {
	return lease.Ref{StreamSeq: c.StreamSeq, Delivered: c.Delivered, ConsumerSeq: c.ConsumerSeq, Deadline: c.Deadline, Start: c.Start}
}

// Settle settles leases this replica issued. Every settle to send is
// published before any reply is awaited, and each is reported only once the
// server has confirmed it.
func (s *settler) Settle(ctx context.Context, op lease.Op, cs []token.Claims, args settle.Args) []settle.Outcome {
	return s.settle(ctx, op, cs, args, settle.Issued)
}

// Adopt settles leases whose issuer is gone, from their tokens alone: each
// is recorded in this replica's table (unless it knows a newer delivery, or
// the same one settled) and, once the ledger shows that no other settle of
// that delivery came first, settled on its rebuilt ack subject. A token is
// dated from its start by the consumer's timing now (the issuer dated it by
// the one then: a shorter ack_wait since has the server redeliver sooner),
// and one that started before a reset noticed since is not recorded: its
// settle fails LEASE_EXPIRED, as it would at its issuer, rather than land on
// a delivery made after the reset.
func (s *settler) Adopt(ctx context.Context, op lease.Op, cs []token.Claims, args settle.Args) []settle.Outcome {
	if err := current(ctx, s.server); err != nil {
		return failedAll(len(cs), err)
	}
	gen, _ := s.server.settles.begin() // from before the table holds them: a void meanwhile waits for them
	defer s.server.settles.end(gen)
	timing, resetAt := s.server.timing(), s.server.resetAt()
	// A reset another replica noticed before this one bound the consumer
	// (one that started since) is in the ledger.
	if shared, err := s.ledger.LastReset(ctx, s.stream, s.name); err != nil {
		return failedAll(len(cs), fmt.Errorf("%w: the ledger's record of the consumer's resets: %v", errs.ErrUnavailable, err))
	} else if shared.After(resetAt) {
		resetAt = shared
	}
	made := s.server.resets.made() // a token that started before it is of a consumer deleted since
	for _, cl := range cs {
		// A lease its issuer kept alive lasts, without the issuer, only
		// until the server's redelivery as of its last known +WPI.
		deadline := cmp.Or(cl.Unkept, cl.Deadline)
		start := cl.Start
		if start.IsZero() { // a token of an earlier release: its start as the timing now has it
			start = deadline.Add(-timing.Lasts(cl.Delivered))
		}
		if start.Before(resetAt) || !cl.Start.IsZero() && cl.Start.Before(made) { // an earlier release's token has no start
			continue
		}
		if now := timing.Deadline(start, cl.Delivered); now.Before(deadline) {
			deadline = now
		}
		s.leases.Adopt(lease.Lease{
			StreamSeq:   cl.StreamSeq,
			ConsumerSeq: cl.ConsumerSeq,
			Delivered:   cl.Delivered,
			Deadline:    deadline,
			Start:       cl.Start,
			Wait:        timing.AckWaitFor(cl.Delivered),
			AckSubject:  pull.AckSubject(s.stream, s.name, cl.Delivered, cl.StreamSeq, cl.ConsumerSeq),
		})
	}
	s.wake() // the table holds them now
	return s.settle(ctx, op, cs, args, settle.Adopted)
}

// failedAll is the outcome of n settles that each failed with err.
func failedAll(n int, err error) []settle.Outcome {
	out := make([]settle.Outcome, n)
	for i := range out {
		out[i].Err = err
	}
	return out
}

// settle settles a batch of leases. The table gives a Consume stream's room
// back as one of its leases is settled, and keeps an Extend's deadline (one
// of 0s gives them back: giveBack). A Term whose answer never came is kept
// to be sent again (unsure.go).
func (s *settler) settle(ctx context.Context, op lease.Op, cs []token.Claims, args settle.Args, w settle.Whose) []settle.Outcome {
	if op == lease.OpExtend && args.Duration != nil && *args.Duration == 0 {
		return s.giveBack(ctx, cs, args, w) // a Nak, settled here
	}
	if err := settleable(ctx, s.server); err != nil { // what passed unheard while NATS was away; deleted
		return failedAll(len(cs), err)
	}
	var termed []lease.Ref // the Terms the server confirmed, told once a reset no longer waits for this settle
	defer func() {
		if len(termed) > 0 && s.terminated != nil {
			s.terminated(ctx, s.stream, s.name, args.Reason, termed)
		}
	}()
	gen, givenUp := s.server.settles.begin() // a reset's void waits for it (inFlight)
	defer s.server.settles.end(gen)
	resetBefore, now, timing := s.server.resetAt(), time.Now(), s.server.timing()
	out := make([]settle.Outcome, len(cs))
	var subjects []string
	var idx, busy []int
	retried := make(map[int]bool) // of cs: retries of a settle whose answer never came (consultLedger)
	begin := func(i int, now time.Time) {
		r := ref(cs[i])
		r.Orphan = args.Orphan
		subj, retry, err := s.leases.Begin(r, op, now)
		if retry {
			retried[i] = true
		}
		switch {
		case errors.Is(err, errs.ErrSettleInProgress) && !args.KeepAlive:
			busy = append(busy, i)
		case err != nil:
			out[i].Err = err
		case subj != "":
			subjects = append(subjects, subj)
			idx = append(idx, i)
		}
	}
	for i := range cs {
		begin(i, now)
	}
	s.awaitInFlight(ctx, &busy, begin, out)
	s.retriedNaks(ctx, op, cs, out)
	consulted := s.ledger.Consulted(op, w) || len(retried) > 0 && s.ledger.Consulted(op, settle.Adopted)
	if len(idx) > 0 && consulted && !s.caughtUp(ctx, op, cs, out, idx) {
		// Before the ledger records them: a settle that cannot be sent
		// must leave no claim, which its retry would take for done.
		return out
	}
	claimedAt := time.Now() // no later than the ledger's claims of this batch
	subjects, idx = s.consultLedger(ctx, op, cs, w, resetBefore, retried, out, subjects, idx)
	if subjects, idx = s.stillLeased(ctx, op, cs, out, subjects, idx, resetBefore, claimedAt); len(subjects) == 0 {
		return out
	}
	sent, inOrder := s.send(ctx, givenUp, resetBefore, op, args, cs, subjects, idx)
	s.noResponders(ctx, op, cs, idx, sent, inOrder, claimedAt)
	done := time.Now()
	for j, i := range idx {
		cl := cs[i]
		switch {
		case sent[j] != nil && givenUp.Err() != nil && !s.server.resetAt().Equal(resetBefore):
			s.leases.Unsure(ref(cl), op)   // nothing: the table holds it no more
			sent[j] = errs.ErrLeaseExpired // a reset voided it, and the server left it unanswered
		case errors.Is(sent[j], settle.ErrUnconfirmed):
			s.leases.Unsure(ref(cl), op)
			if op == lease.OpTerm && s.terminated != nil {
				s.unsure.add(cl, args) // sent again while the lease lasts (unsure.go), by Run
				s.wake()
			}
		case sent[j] == nil && op == lease.OpExtend:
			out[i].NewToken, out[i].Deadline = s.extended(cl, timing, args, now, done)
		default:
			s.leases.Finish(ref(cl), op, sent[j] == nil, done, lease.Extension{})
			if sent[j] == nil && op == lease.OpTerm {
				termed = append(termed, ref(cl))
			}
		}
		out[i].Err = sent[j]
	}
	return out
}

// noResponders replaces each settle.ErrNoResponders of sent (the settles
// begun at idx) with what it means (the consumer deleted, its leader being
// elected, NATS away), once the Naks among them have let their claims go:
// none of them was applied. Sent in order, the last one's answer stands for
// the others, which may have landed: those keep theirs.
func (s *settler) noResponders(ctx context.Context, op lease.Op, cs []token.Claims, idx []int, sent []error, inOrder bool, claimedAt time.Time) {
	if !slices.Contains(sent, settle.ErrNoResponders) {
		return
	}
	if !inOrder {
		s.release(ctx, op, cs, idx, claimedAt, func(j int) bool { return sent[j] == settle.ErrNoResponders })
	}
	gone := s.server.noResponders(ctx)
	for j, err := range sent {
		if err == settle.ErrNoResponders {
			sent[j] = gone
		}
	}
}

// stillLeased keeps, of the settles begun at idx, those that may be sent
// now (caughtUp first), each one it drops with its outcome in out: a reset
// noticed since resetBefore voided them all, and a lease whose deadline
// passed while its settle waited (lease.Table.Overdue) is LEASE_EXPIRED.
func (s *settler) stillLeased(ctx context.Context, op lease.Op, cs []token.Claims, out []settle.Outcome,
	subjects []string, idx []int, resetBefore, claimedAt time.Time) ([]string, []int) {
	if len(idx) == 0 {
		return nil, nil
	}
	if !s.caughtUp(ctx, op, cs, out, idx) {
		s.release(ctx, op, cs, idx, claimedAt, nil) // claimed, and now not sent
		return nil, nil
	}
	if !s.server.resetAt().Equal(resetBefore) {
		// Claimed, and now not sent: a claim left would stand against the
		// delivery after the reset, made with the same key.
		s.release(ctx, op, cs, idx, claimedAt, nil)
		for _, i := range idx {
			out[i].Err = errs.ErrLeaseExpired
		}
		return nil, nil
	}
	rs := make([]lease.Ref, len(idx))
	for j, i := range idx {
		rs[j] = ref(cs[i])
	}
	late := s.leases.Overdue(rs, op, time.Now())
	if len(late) == 0 {
		return subjects, idx
	}
	keepSubj, keepIdx := subjects[:0], idx[:0]
	for j, i := range idx {
		if len(late) > 0 && late[0] == j {
			late = late[1:]
			out[i].Err = errs.ErrLeaseExpired
			continue
		}
		keepSubj, keepIdx = append(keepSubj, subjects[j]), append(keepIdx, i)
	}
	return keepSubj, keepIdx
}

// caughtUp reports whether a replica that may have slept has caught up
// with NATS (Deps.Awake); when it cannot, the leases of idx are live again,
// and each fails as it did.
func (s *settler) caughtUp(ctx context.Context, op lease.Op, cs []token.Claims, out []settle.Outcome, idx []int) bool {
	if s.awake == nil {
		return true
	}
	err := s.awake(ctx)
	if err == nil {
		return true
	}
	now := time.Now()
	for _, i := range idx {
		s.leases.Finish(ref(cs[i]), op, false, now, lease.Extension{})
		out[i].Err = err
	}
	return false
}

// awaitInFlight begins again, as the settles in flight before them end,
// the settles of busy (indexes of leases with another settle in flight):
// the issuer's own +WPI of a lease it keeps alive, or a client library's
// extend beside its handler's ack, is nothing the caller could know of, so
// its settle waits for it rather than failing. One still waiting after the
// request timeout fails SETTLE_IN_PROGRESS.
func (s *settler) awaitInFlight(ctx context.Context, busy *[]int, begin func(int, time.Time), out []settle.Outcome) {
	if len(*busy) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.server.timeout)
	defer cancel()
	for wait := time.Millisecond; len(*busy) > 0; wait = min(2*wait, 50*time.Millisecond) {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			for _, i := range *busy {
				out[i].Err = errs.ErrSettleInProgress
			}
			return
		case <-t.C:
		}
		again := slices.Clone(*busy)
		*busy = (*busy)[:0]
		now := time.Now()
		for _, i := range again {
			begin(i, now)
		}
	}
}

// send sends the settles begun, each confirmed by a reply of its own, or,
// on a consumer the server settles in the order it receives them, the
// batch confirmed by the reply to its last. That one is the lowest stream
// sequence: the server does not answer an ack above the consumer's next
// delivery, and after a reset the lowest is the least likely to be. It
// stops waiting once givenUp ends (inFlight: a drain gave up on the settle's
// generation) if a reset was noticed since resetBefore: the leases are void,
// and the server has not answered. A lease adopted into the table just
// after a void, in the generation the void closed, is live: its settle
// waits on.
func (s *settler) send(ctx, givenUp context.Context, resetBefore time.Time, op lease.Op, args settle.Args, cs []token.Claims,
	subjects []string, idx []int) (sent []error, inOrder bool) {
	ctx, stop := untilVoided(ctx, givenUp, func() bool { return !s.server.resetAt().Equal(resetBefore) })
	defer stop()
	payload := settle.Payload(op, args)
	if !s.server.view().inOrder {
		return s.sender.Send(ctx, subjects, payload), false
	}
	last, low := len(idx)-1, 0
	for j, i := range idx {
		if cs[i].StreamSeq < cs[idx[low]].StreamSeq {
			low = j
		}
	}
	subjects[low], subjects[last] = subjects[last], subjects[low]
	idx[low], idx[last] = idx[last], idx[low]
	return s.sender.SendInOrder(ctx, subjects, payload), true
}

// Superseded reports, for each lease another replica issued, whether this
// replica holds a later delivery of its message: after a consumer reset,
// that lease is from before it, and its settle would land on this
// replica's delivery.
func (s *settler) Superseded(cs []token.Claims) []bool {
	now := time.Now()
	out := make([]bool, len(cs))
	for i, cl := range cs {
		out[i] = s.leases.HoldsLater(ref(cl), now)
	}
	return out
}

// Origins are the creation contexts of the leases cs this replica holds,
// where it kept them (while tracing).
func (s *settler) Origins(cs []token.Claims) []trace.SpanContext {
	rs := make([]lease.Ref, len(cs))
	for i, cl := range cs {
		rs[i] = ref(cl)
	}
	return s.leases.Origins(rs)
}
