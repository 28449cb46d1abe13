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
	if _, err := r.consumer(stream, name); err != nil {
		return RedriveResult{}, err
	}
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

// watchStats refreshes the gauges of every consumer until ctx ends.
func (r *Replica) watchStats(ctx context.Context) {
	t := time.NewTicker(statsEvery)
	defer t.Stop()
	for {
		r.refreshStats(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *Replica) refreshStats(ctx context.Context) {
	for _, c := range r.consumers {
		sctx, cancel := context.WithTimeout(ctx, r.timeout)
		st, err := r.status(sctx, c)
		cancel()
		if err != nil {
			continue // the gauges keep their last value; the RPCs report the error
		}
		r.metrics.oldestUnacked.WithLabelValues(c.Stream, c.Name).Set(st.OldestUnackedAge.Seconds())
		if _, ok := r.routes[consumerKey{c.Stream, c.Name}]; ok {
			r.metrics.deadLetterDepth.WithLabelValues(c.Stream, c.Name).Set(float64(st.DeadLetters))
		}
	}
}
