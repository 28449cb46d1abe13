package consumer

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/pull"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

func ref(c token.Claims) lease.Ref { return lease.Ref{StreamSeq: c.StreamSeq, Delivered: c.Delivered} }

// Settle settles leases this replica holds (issued, or adopted). Every
// settle to send is published before any reply is awaited, and each is
// reported only once the server has confirmed it.
func (c *Consumer) Settle(ctx context.Context, op lease.Op, cs []token.Claims, args settle.Args) []settle.Outcome {
	out := make([]settle.Outcome, len(cs))
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

// Adopt settles leases whose issuer is gone, from their tokens alone: each
// is recorded in this replica's table (unless it knows a newer delivery, or
// the same one settled) and settled on its rebuilt ack subject.
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
	return c.Settle(ctx, op, cs, args)
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
	for i, out := range c.Settle(ctx, lease.OpNak, cs, settle.Args{}) {
		if out.Err != nil {
			c.log.Warn("could not nak a message left by a canceled fetch; it returns after ack_wait",
				"stream_seq", cs[i].StreamSeq, "err", out.Err)
		}
	}
}
