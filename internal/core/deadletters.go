package core

import (
	"context"
	"fmt"
	"time"

	"github.com/jetgate/jetgate/internal/deadletter"
	"github.com/jetgate/jetgate/internal/errs"
)

// statsEvery is how often the per-consumer gauges that need the server
// (dead letters, oldest unacknowledged age) are refreshed: two requests a
// consumer each time.
const statsEvery = 3 * time.Second

// RedriveResult is what a Redrive did.
type RedriveResult struct {
	Redriven int
	Failures []deadletter.Failure
}

// Redrive republishes the consumer's dead letters at seqs (all when empty)
// to their original subjects.
func (r *Replica) Redrive(ctx context.Context, stream, name string, seqs []uint64) (RedriveResult, error) {
	_, done, err := r.consumer(ctx, stream, name)
	if err != nil {
		return RedriveResult{}, err
	}
	defer done()
	route, ok := r.routes[consumerKey{stream, name}]
	if !ok {
		return RedriveResult{}, fmt.Errorf("%w: consumer %q of stream %q has no dead_letter in this gateway's configuration", errs.ErrNoDeadLetter, name, stream)
	}
	n, fails, err := deadletter.Redrive(ctx, r.js, route, seqs, func(ctx context.Context, subject string) error {
		return r.publishTarget(ctx, stream, subject)
	})
	if ctx.Err() != nil {
		return RedriveResult{}, ctx.Err()
	}
	return RedriveResult{Redriven: n, Failures: fails}, err
}
