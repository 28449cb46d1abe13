package replica

import (
	"context"
	"errors"
	"fmt"

	"github.com/jetgate/jetgate/internal/deadletter"
	"github.com/jetgate/jetgate/internal/errs"
)

// DeadLetterPage is a page of a consumer's dead letters.
type DeadLetterPage struct {
	Letters []deadletter.Letter
	Next    uint64 // the sequence the next page starts at; 0: none
	Total   int64
}

// DeadLetters lists up to n of a consumer's dead letters from the sequence
// from on.
func (dead *deadLetters) DeadLetters(ctx context.Context, stream, name string, from uint64, n int) (DeadLetterPage, error) {
	route, err := dead.route(ctx, stream, name)
	if err != nil {
		return DeadLetterPage{}, err
	}
	var p DeadLetterPage
	if p.Total, err = dead.count(ctx, route); err != nil {
		return DeadLetterPage{}, err
	}
	if p.Letters, p.Next, err = deadletter.List(ctx, dead.js, route, from, n); ctx.Err() != nil {
		return DeadLetterPage{}, ctx.Err()
	}
	return p, err
}

// route is where the consumer's dead letters go. The consumer is bound
// first, as for any other call: one of jetgate's own streams, or one that
// does not exist, is CONSUMER_NOT_FOUND here too.
func (dead *deadLetters) route(ctx context.Context, stream, name string) (deadletter.Route, error) {
	_, done, err := dead.binder.consumer(ctx, stream, name)
	if err != nil {
		return deadletter.Route{}, err
	}
	done()
	route, ok := dead.routes[consumerKey{stream, name}]
	if !ok {
		return route, fmt.Errorf("%w: consumer %q of stream %q has no dead_letter in this gateway's configuration", errs.ErrNoDeadLetter, name, stream)
	}
	return route, nil
}

// count is how many dead letters wait on route.
func (dead *deadLetters) count(ctx context.Context, route deadletter.Route) (int64, error) {
	n, err := deadletter.Count(ctx, dead.js, route)
	if errors.Is(err, errs.ErrDeadLetterStreamNotFound) {
		return 0, err
	}
	if err != nil {
		return 0, natsError(ctx, "count dead letters", err)
	}
	return n, nil
}
