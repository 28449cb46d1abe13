package consumer

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// The settler's side of Extend, and of giving orphans back (nak): the new
// deadline and token of an Extend confirmed, the leases it keeps alive past
// one wait, and the Naks of what no caller holds.

// extended records an Extend of cl that succeeded: its +WPI, sent at sent,
// restarted the server's clock at the full wait; with a duration, the lease
// is kept alive until then. It returns the new token (none for the
// issuer's own keep-alive) and the deadline the caller may count on.
func (s *settler) extended(cl token.Claims, timing lease.Policy, args settle.Args, sent, done time.Time) (string, time.Time) {
	ext := lease.Extension{Deadline: timing.Deadline(sent, cl.Delivered), Wait: timing.AckWaitFor(cl.Delivered), KeepAlive: args.KeepAlive, Sent: sent}
	if d := args.Duration; d != nil {
		ext.Until = sent.Add(*d).Truncate(time.Millisecond)
	}
	server, asked := s.leases.Finish(ref(cl), lease.OpExtend, true, done, ext)
	// The token names the delivery by a deadline no earlier than its first
	// (lease.Ref): one kept alive by the one asked, with the server's for a
	// replica acting alone; one cut short by the server's.
	cl.Deadline, cl.Unkept, cl.Start = server, time.Time{}, sent
	if asked.After(server) {
		cl.Deadline, cl.Unkept = asked, server
	}
	shown := cmp.Or(asked, server)
	if args.KeepAlive {
		return "", shown
	}
	return s.tokens.reissue(cl, args.Principal), shown
}

// keepAlive extends the leases kept alive (an Extend with a duration) whose
// deadline is near: the issuer's side of the keep-alive, which ends with
// the issuer (the server then redelivers after one wait).
func (s *settler) keepAlive(ctx context.Context, now time.Time) {
	due := s.leases.KeptDue(now, func(delivered uint64) time.Duration { return extendLead(s.server.timing(), delivered) })
	if len(due) == 0 {
		return
	}
	cs := make([]token.Claims, len(due))
	for i := range due {
		cs[i] = s.tokens.claimsOfLease(&due[i])
	}
	ctx, cancel := context.WithTimeout(ctx, s.server.timeout)
	defer cancel()
	for i, o := range s.settle(ctx, lease.OpExtend, cs, settle.Args{KeepAlive: true}, settle.Issued) {
		if o.Err != nil {
			s.log.Warn("could not keep a lease alive: it ends at its deadline", "stream_seq", cs[i].StreamSeq, "err", o.Err)
		}
	}
}

// giveBack settles an Extend of 0s, which gives the leases back: a Nak,
// reported as an Extend whose deadline is the moment they went back.
func (s *settler) giveBack(ctx context.Context, cs []token.Claims, args settle.Args, w settle.Whose) []settle.Outcome {
	out := s.settle(ctx, lease.OpNak, cs, settle.Args{Principal: args.Principal}, w)
	for i := range out {
		if out[i].Err == nil {
			out[i].Deadline = time.Now().Truncate(time.Millisecond)
		}
	}
	return out
}

// storedNak is the delay of a Nak that gives an orphan back. The server
// keeps a plain Nak in its memory only (its redelivery queue), and one with
// a delay in the consumer's stored state: a NATS that stops with the replica
// (the embedded one), or soon after it, redelivers the second at once when
// it starts again, the first only after ack_wait, a delivery spent (a
// reviewer's finding). The server dates a delayed Nak from ack_wait, but
// waits a redelivery's own backoff step: a delivery whose step is longer
// than ack_wait gets a plain Nak, or its redelivery would wait the
// difference.
const storedNak = time.Millisecond

// nak sends orphans back so that they are redelivered at once rather than
// after ack_wait, through a NATS restart too where it can (storedNak).
func (s *settler) nak(ctx context.Context, ds []*Delivery) {
	if len(ds) == 0 {
		return
	}
	s.counts.Orphans[OrphanNaked].Add(uint64(len(ds)))
	timing := s.server.timing()
	var stored, plain []token.Claims
	for _, d := range ds {
		if timing.AckWaitFor(d.Meta.Delivered) <= timing.AckWait {
			stored = append(stored, s.tokens.claims(d))
		} else {
			plain = append(plain, s.tokens.claims(d))
		}
	}
	s.nakClaims(ctx, stored, settle.Args{Delay: storedNak, Orphan: true})
	s.nakClaims(ctx, plain, settle.Args{Orphan: true})
}

// nakClaims naks cs with args. Recorded in the ledger like any Nak of an
// issued lease: the pool also gives back the leases of ended Consume
// streams, whose caller holds tokens.
func (s *settler) nakClaims(ctx context.Context, cs []token.Claims, args settle.Args) {
	if len(cs) == 0 {
		return
	}
	for i, out := range s.settle(ctx, lease.OpNak, cs, args, settle.Issued) {
		// Settled meanwhile, or taken back by its caller: not for it to give back.
		if out.Err != nil && !errors.Is(out.Err, errs.ErrLeaseSettled) {
			s.log.Warn("could not nak a message left by a canceled fetch; it returns after ack_wait",
				"stream_seq", cs[i].StreamSeq, "err", out.Err)
		}
	}
}
