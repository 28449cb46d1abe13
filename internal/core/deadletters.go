package core

import (
	"context"
	"fmt"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
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

// startDeadLetters starts the worker that copies the dead letters of the
// consumers with a dead_letter.
func (r *Replica) startDeadLetters(ctx context.Context, cs []consumer.Config) error {
	var routes []deadletter.Route
	for _, cfg := range cs {
		dl := cfg.DeadLetter
		if dl == nil {
			continue
		}
		route, err := deadletter.Resolve(ctx, r.js, deadletter.Route{Stream: cfg.Stream, Consumer: cfg.Name, Subject: dl.Subject, OnTerm: dl.OnTerm})
		if err != nil {
			return err
		}
		r.routes[consumerKey{cfg.Stream, cfg.Name}] = route
		r.metrics.watchDeadLetters(cfg.Stream, cfg.Name)
		routes = append(routes, route)
	}
	if len(routes) == 0 {
		return nil
	}
	var err error
	r.dead, err = deadletter.Start(ctx, deadletter.Options{
		JS: r.js, Routes: routes, Replicas: r.stateReplicas, Log: r.log, Copied: r.metrics.deadLetters,
	})
	return err
}
