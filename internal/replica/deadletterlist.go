package replica

import (
	"context"
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
	route, err := dead.route(stream, name)
	if err != nil {
		return DeadLetterPage{}, err
	}
	var p DeadLetterPage
	if p.Total, err = dead.count(ctx, stream, name); err != nil {
		return DeadLetterPage{}, err
	}
	if p.Letters, p.Next, err = deadletter.List(ctx, dead.js, route, from, n); ctx.Err() != nil {
		return DeadLetterPage{}, ctx.Err()
	}
	return p, err
}

func (dead *deadLetters) route(stream, name string) (deadletter.Route, error) {
	if dead.binder.bound(stream, name) == nil && !dead.binder.onDemand.Matches(stream, name) {
		return deadletter.Route{}, notServed(consumerKey{stream, name})
	}
	route, ok := dead.routes[consumerKey{stream, name}]
	if !ok {
		return route, fmt.Errorf("%w: consumer %q of stream %q has no dead_letter in this gateway's configuration", errs.ErrNoDeadLetter, name, stream)
	}
	return route, nil
}

// deadLetterCount is how many dead letters of the consumer wait.
func (dead *deadLetters) count(ctx context.Context, stream, name string) (int64, error) {
	route, err := dead.route(stream, name)
	if err != nil {
		return 0, err
	}
	n, err := deadletter.Count(ctx, dead.js, route)
	if err != nil {
		return 0, natsError(ctx, "count dead letters", err)
	}
	return n, nil
}
