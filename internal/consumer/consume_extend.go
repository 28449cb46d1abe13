package consumer

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// A stream's leases kept alive (ConsumeRequest.AutoExtend): by its loop as
// it wakes, and by a goroutine of its own while a send waits for its reader.

// extendAlongside extends the stream's leases on a goroutine of its own, as
// well as its loop does: a send that waits for a slow reader (up to the
// stall guard's 30s) must not let them lapse. The loop extends too, as it
// wakes for anything else (a lease cut short by a new leader or an
// operator's edit). stop ends it and waits for it.
func (k *consumeStream) extendAlongside(ctx context.Context, principal string, maxLease time.Duration) (stop func()) {
	ectx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { k.extendUntil(ectx, principal, maxLease) })
	return func() { cancel(); wg.Wait() }
}

// untilNextDue is how long until a lease the stream holds needs attention:
// with auto_extend, its extension, unless it has been held for maxLease;
// otherwise its deadline, when its room returns.
func (k *consumeStream) untilNextDue(autoExtend bool, maxLease time.Duration, now time.Time) time.Duration {
	next := time.Hour
	k.pl.leases.Owned(k.o, func(l *lease.Lease, handed time.Time) {
		if !l.Deadline.After(now) {
			return // past its deadline, settling: it leaves with its settle or a sweep
		}
		at := l.Deadline
		if autoExtend && now.Sub(handed) < maxLease {
			at = at.Add(-extendLead(k.pl.server.timing(), l.Delivered))
		}
		next = min(next, at.Sub(now))
	})
	return max(next, 10*time.Millisecond)
}

// extendLead is how long before a lease's deadline, by the consumer's
// timing, auto_extend (and the issuer's keep-alive) renews it: a third of
// its wait, so that a slow +WPI still lands in time, and for a short wait
// restartLead at least, so that a lease still has time left when a NATS
// server that restarted counts its wait from a time it kept to the second
// (lease.RestorePrecision; else a restart of a moment hands the message to
// the next pull); never more than two thirds of the lease's life, lest it
// be renewed again at once.
func extendLead(timing lease.Policy, delivered uint64) time.Duration {
	return min(max(timing.AckWaitFor(delivered)/3, restartLead), timing.Lasts(delivered)*2/3)
}

// restartLead is the lead that leaves a renewed lease's server-side wait a
// quarter second past a NATS restart's loss of precision.
const restartLead = lease.RestorePrecision + 250*time.Millisecond

// extendUntil extends the stream's leases as they come due (extend) until
// ctx ends, looking again when the next is due, the stream takes more, or
// consumeMaxWait has passed.
func (k *consumeStream) extendUntil(ctx context.Context, principal string, maxLease time.Duration) {
	for {
		away := k.extend(ctx, principal, maxLease, time.Now(), false)
		wait := min(k.untilNextDue(true, maxLease, time.Now()), consumeMaxWait)
		if away {
			// NATS away (a stream that outlasts it): not again at once for
			// the leases still due.
			wait = max(wait, extendAwayWait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-k.claimed:
			t.Stop()
		case <-t.C:
		}
	}
}

// extend renews the leases the stream holds whose deadline is near (all of
// them with all), unless they have been held for maxLease.
func (k *consumeStream) extend(ctx context.Context, principal string, maxLease time.Duration, now time.Time, all bool) (away bool) {
	pl := k.pl
	timing := pl.server.timing()
	var due []token.Claims
	pl.leases.Owned(k.o, func(l *lease.Lease, handed time.Time) {
		if (all || l.Deadline.Sub(now) <= extendLead(timing, l.Delivered)) && now.Sub(handed) < maxLease {
			due = append(due, pl.tokens.claimsOfLease(l))
		}
	})
	if len(due) == 0 {
		return false
	}
	// The table moves the deadlines of those it extends; one settled
	// meanwhile, or NATS away, keeps its own.
	out := pl.settles.settle(ctx, lease.OpExtend, due, settle.Args{Principal: principal, KeepAlive: true}, settle.Issued)
	return slices.ContainsFunc(out, func(o settle.Outcome) bool { return errors.Is(o.Err, errs.ErrUnavailable) })
}
