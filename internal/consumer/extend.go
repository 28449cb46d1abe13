package consumer

import (
	"cmp"
	"context"
	"time"

	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// The settler's side of Extend: the new deadline and token of an Extend
// confirmed, and the leases it keeps alive past one wait.

// extended records an Extend of cl that succeeded: its +WPI, sent at sent,
// restarted the server's clock at the full wait; with a duration, the lease
// is kept alive until then. It returns the new token (none for the
// issuer's own keep-alive) and the deadline the caller may count on.
func (s *settler) extended(cl token.Claims, timing lease.Policy, args settle.Args, sent, done time.Time) (string, time.Time) {
	clock := sent // when the server's clock of the delivery starts again
	if args.Shorten > 0 {
		clock = sent.Add(args.Shorten - timing.AckWait) // the Nak's delay runs from ack_wait ago (shortening)
	}
	ext := lease.Extension{Deadline: timing.Deadline(clock, cl.Delivered), Wait: timing.AckWaitFor(cl.Delivered), KeepAlive: args.KeepAlive}
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

// shortening is the delay of the Nak an Extend is sent as (settle.Args's
// Shorten), or 0 for +WPI: an Extend whose duration ends before a +WPI's
// wait would, for every lease of the batch. The server takes a Nak's delay
// as running from one ack_wait ago, and redelivers the message when its
// wait from then has passed; the delay is set so that it does so at the
// end of the time asked for the lease of the shortest wait (the margin
// kept), later for the others. Not sent: +WPI, which would hold the
// message from everyone until a whole wait on.
func shortening(op lease.Op, args settle.Args, timing lease.Policy, cs []token.Claims) time.Duration {
	if op != lease.OpExtend || args.Duration == nil || *args.Duration <= 0 || args.KeepAlive || len(cs) == 0 {
		return 0
	}
	shortest := timing.Lasts(cs[0].Delivered)
	for _, cl := range cs[1:] {
		shortest = min(shortest, timing.Lasts(cl.Delivered))
	}
	if *args.Duration >= shortest {
		return 0 // kept alive, if longer than a wait: +WPI
	}
	// From now on, the server's clock of the shortest runs out at the end of
	// the time asked, as a +WPI's would at the end of its lease.
	return max(*args.Duration-shortest+timing.AckWait, time.Millisecond)
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
