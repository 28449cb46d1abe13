package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/pull"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

func ref(c token.Claims) lease.Ref { return lease.Ref{StreamSeq: c.StreamSeq, Delivered: c.Delivered} }

// whose says whose lease a settle acts on, which decides what the ledger
// must know first.
type whose uint8

const (
	// issued: a lease this replica handed out. Its table knows its state;
	// only a Nak is recorded in the ledger (before it is sent), since a Nak
	// is what supersedes a delivery before its deadline.
	issued whose = iota
	// adopted: a lease whose issuer is gone, known from its token alone.
	// Every settle claims the delivery in the ledger first: one that finds
	// it nak'ed or settled otherwise is refused rather than sent, because
	// it would land on the next delivery of the message.
	adopted
)

// Settle settles leases this replica issued. Every settle to send is
// published before any reply is awaited, and each is reported only once the
// server has confirmed it.
func (c *Consumer) Settle(ctx context.Context, op lease.Op, cs []token.Claims, args settle.Args) []settle.Outcome {
	return c.settle(ctx, op, cs, args, issued)
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
			Deadline:    cl.Deadline,
			AckSubject:  pull.AckSubject(c.Stream, c.Name, cl.Delivered, cl.StreamSeq, cl.ConsumerSeq),
		})
	}
	return c.settle(ctx, op, cs, args, adopted)
}

func (c *Consumer) settle(ctx context.Context, op lease.Op, cs []token.Claims, args settle.Args, w whose) []settle.Outcome {
	out := c.settleBatch(ctx, op, cs, args, w)
	if op != lease.OpExtend {
		for i, o := range out {
			if o.Err == nil {
				c.owners.settled(cs[i].StreamSeq, cs[i].Delivered)
			}
		}
	}
	return out
}

func (c *Consumer) settleBatch(ctx context.Context, op lease.Op, cs []token.Claims, args settle.Args, w whose) []settle.Outcome {
	out := make([]settle.Outcome, len(cs))
	if op < lease.OpAck || op > lease.OpExtend {
		return settle.Fill(out, fmt.Errorf("%w: unknown settle op %d", errs.ErrInvalidArgument, op))
	}
	now := time.Now()
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
	c.retriedNaks(ctx, op, cs, w, out)
	if len(subjects) == 0 {
		return out
	}
	subjects, idx = c.consultLedger(ctx, op, cs, w, out, subjects, idx)
	if len(subjects) == 0 {
		return out
	}
	errs := c.sender.Send(ctx, subjects, settle.Payload(op, args))
	if slices.Contains(errs, settle.ErrNoResponders) {
		gone := c.noResponders(ctx)
		for j, err := range errs {
			if err == settle.ErrNoResponders {
				errs[j] = gone
			}
		}
	}
	done := time.Now()
	for j, i := range idx {
		cl := cs[i]
		var nd time.Time
		if errs[j] == nil && op == lease.OpExtend {
			// +WPI restarts the server's clock at the full wait.
			nd = c.policy.Deadline(now, cl.Delivered)
			cl.Deadline = nd
			cl.Issuer = c.self // for an adopted lease, this replica holds it now
			out[i].NewToken = c.keys.Seal(cl, c.Stream, c.Name, args.Principal)
			out[i].Deadline = nd
		}
		if errors.Is(errs[j], settle.ErrUnconfirmed) {
			c.leases.Unsure(ref(cl), op)
		} else {
			c.leases.Finish(ref(cl), op, errs[j] == nil, done, nd)
		}
		out[i].Err = errs[j]
	}
	return out
}

// consultLedger records in the ledger what must be known before the settles
// begun at idx are sent, and keeps only those still to send. Each one it
// drops is finished in the table with its outcome in out.
func (c *Consumer) consultLedger(ctx context.Context, op lease.Op, cs []token.Claims, w whose, out []settle.Outcome,
	subjects []string, idx []int) ([]string, []int) {
	if c.ledger == nil || (w == issued && op != lease.OpNak) {
		return subjects, idx
	}
	es := make([]settle.Entry, len(idx))
	for j, i := range idx {
		es[j] = settle.Entry{
			Stream: c.Stream, Consumer: c.Name,
			StreamSeq: cs[i].StreamSeq, Delivered: cs[i].Delivered,
			TTL: c.policy.AckWaitFor(cs[i].Delivered),
		}
	}
	var prior []lease.Op
	var fails []error
	if op == lease.OpExtend {
		prior, fails = c.ledger.Lookup(ctx, es) // a +WPI supersedes nothing
	} else {
		prior, fails = c.ledger.Claim(ctx, op, es)
	}
	keepSubj, keepIdx := subjects[:0], idx[:0]
	now := time.Now()
	for j, i := range idx {
		r := ref(cs[i])
		switch {
		case fails[j] != nil:
			c.leases.Finish(r, op, false, now, time.Time{})
			out[i].Err = fails[j]
		case prior[j] == 0, prior[j] == op && (op == lease.OpAck || op == lease.OpTerm):
			// Nothing came first, or the same Ack or Term (a retry, whose
			// first try may not have reached the server): nothing can have
			// superseded the delivery, so sending it is safe.
			keepSubj, keepIdx = append(keepSubj, subjects[j]), append(keepIdx, i)
		case prior[j] == op && op == lease.OpNak:
			// A retry of a Nak that may have been applied: sent again, it
			// would land on the redelivery. Done; at worst the message
			// returns after its ack wait.
			c.leases.Finish(r, op, true, now, time.Time{})
		default:
			c.leases.Finish(r, op, false, now, time.Time{})
			out[i].Err = errs.ErrLeaseSettled
		}
	}
	return keepSubj, keepIdx
}

// retriedNaks turns LEASE_EXPIRED into success for a Nak whose delivery the
// ledger shows nak'ed already: a retry whose first try took (the
// redelivery may be out, or the deadline past), which must not be sent
// again but is no failure either.
func (c *Consumer) retriedNaks(ctx context.Context, op lease.Op, cs []token.Claims, w whose, out []settle.Outcome) {
	if op != lease.OpNak || c.ledger == nil {
		return
	}
	var es []settle.Entry
	var idx []int
	for i, o := range out {
		if errors.Is(o.Err, errs.ErrLeaseExpired) {
			es = append(es, settle.Entry{Stream: c.Stream, Consumer: c.Name, StreamSeq: cs[i].StreamSeq, Delivered: cs[i].Delivered})
			idx = append(idx, i)
		}
	}
	if len(es) == 0 {
		return
	}
	prior, fails := c.ledger.Lookup(ctx, es)
	for j, i := range idx {
		if fails[j] == nil && prior[j] == lease.OpNak {
			out[i].Err = nil
		}
	}
}

// nak sends orphans back so that they are redelivered at once rather than
// after ack_wait.
func (c *Consumer) nak(ctx context.Context, ds []*Delivery) {
	if len(ds) == 0 {
		return
	}
	c.naked.Add(float64(len(ds)))
	cs := make([]token.Claims, len(ds))
	for i, d := range ds {
		cs[i] = c.claimsOf(d)
	}
	// Recorded in the ledger like any Nak of an issued lease: the pool also
	// gives back the leases of ended Consume streams, whose caller holds
	// tokens.
	for i, out := range c.settle(ctx, lease.OpNak, cs, settle.Args{}, issued) {
		if out.Err != nil {
			c.log.Warn("could not nak a message left by a canceled fetch; it returns after ack_wait",
				"stream_seq", cs[i].StreamSeq, "err", out.Err)
		}
	}
}
