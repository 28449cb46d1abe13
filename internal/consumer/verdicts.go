package consumer

import (
	"context"
	"errors"
	"time"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// The settler's questions to the settle ledger (settle.Ledger): what a
// settle about to be sent must learn of the other settles of its delivery,
// and whether a Nak past its deadline is the retry of one that took.

// entry is the ledger's record of the delivery cl names, made after the
// reset noticed at since (zero: not known to be).
func (s *settler) entry(cl token.Claims, since time.Time) settle.Entry {
	return settle.Entry{
		Stream: s.stream, Consumer: s.name,
		StreamSeq: cl.StreamSeq, Delivered: cl.Delivered,
		TTL:   s.server.timing().AckWaitFor(cl.Delivered),
		Since: since,
	}
}

// consultLedger asks the ledger's verdict on the settles begun at idx and
// keeps only those to send; each one it drops is finished in the table, with
// its outcome in out. Those of retried (indexes of cs) retry a settle whose
// answer never came: the caller, told so, may have nak'ed the token through
// another replica meanwhile, which took this one for gone, and sent blind
// the retry would land on the Nak's redelivery. They ask as an adopted
// lease's settles do; the rest of the batch as w's.
//
// A lease this replica issued and still holds after resetBefore (the last
// reset noticed as its settle began) was received after that reset: each
// voids those received before it. So a record from before resetBefore is an
// earlier delivery's (settle.Entry's Since). Not so for an adopted lease,
// known from its token alone, which counts every record.
func (s *settler) consultLedger(ctx context.Context, op lease.Op, cs []token.Claims, w settle.Whose, resetBefore time.Time,
	retried map[int]bool, out []settle.Outcome, subjects []string, idx []int) ([]string, []int) {
	var since time.Time
	if w == settle.Issued {
		since = resetBefore
	}
	if len(retried) == 0 {
		return s.verdicts(ctx, op, cs, w, since, out, subjects, idx)
	}
	var rs, fs []string
	var ri, fi []int
	for j, i := range idx {
		if retried[i] {
			rs, ri = append(rs, subjects[j]), append(ri, i)
		} else {
			fs, fi = append(fs, subjects[j]), append(fi, i)
		}
	}
	rs, ri = s.verdicts(ctx, op, cs, settle.Adopted, since, out, rs, ri)
	fs, fi = s.verdicts(ctx, op, cs, w, since, out, fs, fi)
	return append(rs, fs...), append(ri, fi...)
}

// verdicts is consultLedger for settles of leases asking as w's.
func (s *settler) verdicts(ctx context.Context, op lease.Op, cs []token.Claims, w settle.Whose, since time.Time,
	out []settle.Outcome, subjects []string, idx []int) ([]string, []int) {
	if len(idx) == 0 || !s.ledger.Consulted(op, w) {
		return subjects, idx
	}
	es := make([]settle.Entry, len(idx))
	for j, i := range idx {
		es[j] = s.entry(cs[i], since)
	}
	verdicts, fails := s.ledger.Verdicts(ctx, op, w, es)
	keepSubj, keepIdx := subjects[:0], idx[:0]
	now := time.Now()
	for j, i := range idx {
		switch {
		case fails[j] != nil:
			out[i].Err = fails[j]
		case verdicts[j] == settle.Send:
			keepSubj, keepIdx = append(keepSubj, subjects[j]), append(keepIdx, i)
			continue
		case verdicts[j] == settle.Refuse:
			out[i].Err = errs.ErrLeaseSettled
		}
		s.leases.Finish(ref(cs[i]), op, out[i].Err == nil, now, lease.Extension{})
	}
	return keepSubj, keepIdx
}

// release lets go of the ledger's records of the Naks at idx (those unsent
// says, all if nil) that this batch claimed, no earlier than claimedAt, and
// then, for sure, did not send: the caller's retry would otherwise find the
// delivery nak'ed and be answered as done without a send, and the message
// come back only after its ack wait. A consumer leader being elected (no
// responders) or a replica that cannot catch up with NATS does that. A
// record is let go only within its entry's TTL of claimedAt: it is then
// surely this batch's own, no other claim of the delivery possible while
// it lasts.
func (s *settler) release(ctx context.Context, op lease.Op, cs []token.Claims, idx []int, claimedAt time.Time, unsent func(j int) bool) {
	if op != lease.OpNak || !s.ledger.Consulted(op, settle.Issued) {
		return
	}
	var es []settle.Entry
	for j, i := range idx {
		if e := s.entry(cs[i], time.Time{}); (unsent == nil || unsent(j)) && time.Since(claimedAt) < e.TTL {
			es = append(es, e)
		}
	}
	if len(es) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.server.timeout)
	defer cancel()
	if err := errors.Join(s.ledger.Release(ctx, op, es)...); err != nil {
		s.log.Warn("could not let go of the ledger's claim of Naks that were not sent; their callers' retries are answered as done, and the messages come back after their ack wait",
			"stream", s.stream, "consumer", s.name, "err", err)
	}
}

// retriedNaks turns LEASE_EXPIRED into success for a Nak whose delivery the
// ledger shows nak'ed already: a retry whose first try took (the
// redelivery may be out, or the deadline past). Not for a lease received
// before the last reset this replica noticed: the reset may be what voided
// it, and the ledger's Nak that of the delivery the server made after it,
// whose key is the same (a reset restarts the delivery count).
func (s *settler) retriedNaks(ctx context.Context, op lease.Op, cs []token.Claims, out []settle.Outcome) {
	if op != lease.OpNak {
		return
	}
	reset := s.server.resetAt()
	var es []settle.Entry
	var idx []int
	for i, o := range out {
		if !errors.Is(o.Err, errs.ErrLeaseExpired) {
			continue
		}
		// The token's deadline less a whole ack_wait is no later than when
		// its delivery was received.
		if received := cs[i].Deadline.Add(-s.server.timing().AckWaitFor(cs[i].Delivered)); !reset.After(received) {
			es = append(es, s.entry(cs[i], reset))
			idx = append(idx, i)
		}
	}
	for j, naked := range s.ledger.NakedAlready(ctx, es) {
		if naked {
			out[idx[j]].Err = nil
		}
	}
}
