package server

import (
	"context"
	"fmt"
	"time"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/auth"
	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
)

// errCredentialLapsed ends a stream, or a Fetch that waits, whose caller's
// credential (a JWT) has expired since it began: a call lasts no longer
// than what opened it.
var errCredentialLapsed = fmt.Errorf("%w: the credential the call began with has expired", errs.ErrUnauthenticated)

// lapsing is ctx, ended when its caller's credential lapses.
func lapsing(ctx context.Context) (context.Context, context.CancelFunc) {
	until := auth.Until(ctx)
	if until.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadlineCause(ctx, until, errCredentialLapsed)
}

// waitLapsing is ctx, canceled when its caller's credential lapses, for a
// unary call that may wait past that: a Fetch, which waits up to its
// expires (limits.max_expires, 30s or more). Any other call answers within
// the request timeout, as does a Fetch that stops waiting before the
// credential lapses: those are ctx itself, no timer. It cancels rather than
// sets a deadline: a deadline would shorten the Fetch's wait
// (puller.limits), answering it OK, empty, just before the lapse.
func waitLapsing(ctx context.Context, req any) (context.Context, context.CancelFunc) {
	until := auth.Until(ctx)
	f, ok := req.(*jetgatev1.FetchRequest)
	if until.IsZero() || !ok {
		return ctx, func() {}
	}
	expires := consumer.DefaultExpires
	if f.Expires != nil {
		expires = f.GetExpires().AsDuration()
	}
	end := time.Now().Add(expires + consumer.DefaultRequestTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(end) {
		end = dl // the caller's deadline ends the Fetch first
	}
	if !until.Before(end) {
		return ctx, func() {}
	}
	lctx, cancel := context.WithCancelCause(ctx)
	t := time.AfterFunc(time.Until(until), func() { cancel(errCredentialLapsed) })
	return lctx, func() {
		t.Stop()
		cancel(nil)
	}
}
