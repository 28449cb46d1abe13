package consumer

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/pull"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
	"go.opentelemetry.io/otel/trace"
)

// ref is the delivery a token names: the consumer sequence and deadline
// tell it from a delivery of the same message after a consumer reset.
func ref(c token.Claims) lease.Ref {
	return lease.Ref{StreamSeq: c.StreamSeq, Delivered: c.Delivered, ConsumerSeq: c.ConsumerSeq, Deadline: c.Deadline}
}

// Settle settles leases this replica issued. Every settle to send is
// published before any reply is awaited, and each is reported only once the
// server has confirmed it.
func (c *Consumer) Settle(ctx context.Context, op lease.Op, cs []token.Claims, args settle.Args) []settle.Outcome {
	return c.settle(ctx, op, cs, args, settle.Issued)
}

// Adopt settles leases whose issuer is gone, from their tokens alone: each
// is recorded in this replica's table (unless it knows a newer delivery, or
// the same one settled) and, once the ledger shows that no other settle of
// that delivery came first, settled on its rebuilt ack subject.
func (c *Consumer) Adopt(ctx context.Context, op lease.Op, cs []token.Claims, args settle.Args) []settle.Outcome {
	for _, cl := range cs {
		c.leases.Adopt(lease.Lease{
			StreamSeq:   cl.StreamSeq,
			ConsumerSeq: cl.ConsumerSeq,
			Delivered:   cl.Delivered,
			// A lease its issuer kept alive lasts, without the issuer, only
			// until the server's redelivery as of its last known +WPI.
			Deadline:   cmp.Or(cl.Unkept, cl.Deadline),
			AckSubject: pull.AckSubject(c.Stream, c.Name, cl.Delivered, cl.StreamSeq, cl.ConsumerSeq),
		})
	}
	c.wake() // the table holds them now
	return c.settle(ctx, op, cs, args, settle.Adopted)
}

// settle settles a batch of leases. The table gives a Consume stream's room
// back as one of its leases is settled, and keeps an Extend's deadline. An
// Extend of 0s gives the leases back: a Nak, reported as an Extend whose
// deadline is the moment they went back.
func (c *Consumer) settle(ctx context.Context, op lease.Op, cs []token.Claims, args settle.Args, w settle.Whose) []settle.Outcome {
	if op == lease.OpExtend && args.Duration != nil && *args.Duration == 0 {
		out := c.settle(ctx, lease.OpNak, cs, settle.Args{Principal: args.Principal}, w)
		for i := range out {
			if out[i].Err == nil {
				out[i].Deadline = time.Now().Truncate(time.Millisecond)
			}
		}
		return out
	}
	out := make([]settle.Outcome, len(cs))
	now, timing := time.Now(), c.timing()
	var subjects []string
	var idx []int
	for i, cl := range cs {
		subj, err := c.leases.Begin(ref(cl), op, now)
		switch {
		case err != nil:
			out[i].Err = err
		case subj != "":
			subjects = append(subjects, subj)
			idx = append(idx, i)
		}
	}
	c.retriedNaks(ctx, op, cs, out)
	subjects, idx = c.consultLedger(ctx, op, cs, w, out, subjects, idx)
	if len(subjects) == 0 {
		return out
	}
	errs := c.send(ctx, op, args, cs, subjects, idx)
	if slices.Contains(errs, settle.ErrNoResponders) {
		gone := c.server.noResponders(ctx)
		for j, err := range errs {
			if err == settle.ErrNoResponders {
				errs[j] = gone
			}
		}
	}
	done := time.Now()
	for j, i := range idx {
		cl := cs[i]
		switch {
		case errors.Is(errs[j], settle.ErrUnconfirmed):
			c.leases.Unsure(ref(cl), op)
		case errs[j] == nil && op == lease.OpExtend:
			out[i].NewToken, out[i].Deadline = c.extended(cl, timing, args, now, done)
		default:
			c.leases.Finish(ref(cl), op, errs[j] == nil, done, lease.Extension{})
		}
		out[i].Err = errs[j]
	}
	return out
}

// extended records an Extend of cl that succeeded: its +WPI, sent at sent,
// restarted the server's clock at the full wait; with a duration, the lease
// is kept alive until then. It returns the new token (none for the
// issuer's own keep-alive) and the deadline the caller may count on.
func (c *Consumer) extended(cl token.Claims, timing lease.Policy, args settle.Args, sent, done time.Time) (string, time.Time) {
	ext := lease.Extension{Deadline: timing.Deadline(sent, cl.Delivered), Wait: timing.AckWaitFor(cl.Delivered), KeepAlive: args.KeepAlive}
	if d := args.Duration; d != nil {
		ext.Until = sent.Add(*d).Truncate(time.Millisecond)
	}
	server, asked := c.leases.Finish(ref(cl), lease.OpExtend, true, done, ext)
	// The token names the delivery by a deadline no earlier than its first
	// (lease.Ref): one kept alive by the one asked, with the server's for a
	// replica acting alone; one cut short by the server's.
	cl.Deadline, cl.Unkept = server, time.Time{}
	if asked.After(server) {
		cl.Deadline, cl.Unkept = asked, server
	}
	shown := cmp.Or(asked, server)
	if args.KeepAlive {
		return "", shown
	}
	return c.tokens.reissue(cl, args.Principal), shown
}

// send sends the settles begun, each confirmed by a reply of its own, or,
// on a consumer the server settles in the order it receives them, the
// batch confirmed by the reply to its last. That one is the lowest stream
// sequence: the server does not answer an ack above the consumer's next
// delivery, and after a reset the lowest is the least likely to be.
func (c *Consumer) send(ctx context.Context, op lease.Op, args settle.Args, cs []token.Claims, subjects []string, idx []int) []error {
	payload := settle.Payload(op, args)
	if !c.server.load().inOrder {
		return c.sender.Send(ctx, subjects, payload)
	}
	last, low := len(idx)-1, 0
	for j, i := range idx {
		if cs[i].StreamSeq < cs[idx[low]].StreamSeq {
			low = j
		}
	}
	subjects[low], subjects[last] = subjects[last], subjects[low]
	idx[low], idx[last] = idx[last], idx[low]
	return c.sender.SendInOrder(ctx, subjects, payload)
}

// entry is the ledger's record of the delivery cl names.
func (c *Consumer) entry(cl token.Claims) settle.Entry {
	return settle.Entry{
		Stream: c.Stream, Consumer: c.Name,
		StreamSeq: cl.StreamSeq, Delivered: cl.Delivered,
		TTL: c.timing().AckWaitFor(cl.Delivered),
	}
}

// consultLedger asks the ledger's verdict on the settles begun at idx and
// keeps only those to send; each one it drops is finished in the table, with
// its outcome in out.
func (c *Consumer) consultLedger(ctx context.Context, op lease.Op, cs []token.Claims, w settle.Whose, out []settle.Outcome,
	subjects []string, idx []int) ([]string, []int) {
	if len(idx) == 0 || !c.ledger.Consulted(op, w) {
		return subjects, idx
	}
	es := make([]settle.Entry, len(idx))
	for j, i := range idx {
		es[j] = c.entry(cs[i])
	}
	verdicts, fails := c.ledger.Verdicts(ctx, op, w, es)
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
		c.leases.Finish(ref(cs[i]), op, out[i].Err == nil, now, lease.Extension{})
	}
	return keepSubj, keepIdx
}

// retriedNaks turns LEASE_EXPIRED into success for a Nak whose delivery the
// ledger shows nak'ed already: a retry whose first try took (the
// redelivery may be out, or the deadline past). Not for a lease received
// before the last reset this replica noticed: the reset may be what voided
// it, and the ledger's Nak that of the delivery the server made after it,
// whose key is the same (a reset restarts the delivery count).
func (c *Consumer) retriedNaks(ctx context.Context, op lease.Op, cs []token.Claims, out []settle.Outcome) {
	if op != lease.OpNak {
		return
	}
	reset := c.resets.since()
	var es []settle.Entry
	var idx []int
	for i, o := range out {
		if !errors.Is(o.Err, errs.ErrLeaseExpired) {
			continue
		}
		// The token's deadline less a whole ack_wait is no later than when
		// its delivery was received.
		if received := cs[i].Deadline.Add(-c.timing().AckWaitFor(cs[i].Delivered)); !reset.After(received) {
			es = append(es, c.entry(cs[i]))
			idx = append(idx, i)
		}
	}
	for j, naked := range c.ledger.NakedAlready(ctx, es) {
		if naked {
			out[idx[j]].Err = nil
		}
	}
}

// Superseded reports, for each lease another replica issued, whether this
// replica holds a later delivery of its message: after a consumer reset,
// that lease is from before it, and its settle would land on this
// replica's delivery.
func (c *Consumer) Superseded(cs []token.Claims) []bool {
	now := time.Now()
	out := make([]bool, len(cs))
	for i, cl := range cs {
		out[i] = c.leases.HoldsLater(ref(cl), now)
	}
	return out
}

// nak sends orphans back so that they are redelivered at once rather than
// after ack_wait.
func (c *Consumer) nak(ctx context.Context, ds []*Delivery) {
	if len(ds) == 0 {
		return
	}
	c.counts.Orphans[OrphanNaked].Add(uint64(len(ds)))
	cs := make([]token.Claims, len(ds))
	for i, d := range ds {
		cs[i] = c.ClaimsOf(d)
	}
	// Recorded in the ledger like any Nak of an issued lease: the pool also
	// gives back the leases of ended Consume streams, whose caller holds
	// tokens.
	for i, out := range c.settle(ctx, lease.OpNak, cs, settle.Args{}, settle.Issued) {
		if out.Err != nil {
			c.log.Warn("could not nak a message left by a canceled fetch; it returns after ack_wait",
				"stream_seq", cs[i].StreamSeq, "err", out.Err)
		}
	}
}

// Origins are the creation contexts of the leases cs this replica holds,
// where it kept them (while tracing).
func (c *Consumer) Origins(cs []token.Claims) []trace.SpanContext {
	rs := make([]lease.Ref, len(cs))
	for i, cl := range cs {
		rs[i] = ref(cl)
	}
	return c.leases.Origins(rs)
}
