package replica

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
// deadLetters copy the letters of consumers with a dead_letter into its
// stream (the worker), list them and redrive them.
type deadLetters struct {
	*env
	binder    *binder
	publisher *publisher
	routes    map[consumerKey]deadletter.Route // consumers with a dead letter
	worker    *deadletter.Worker               // nil when none has
}

// stop stops the worker.
func (dead *deadLetters) stop() {
	if dead.worker != nil {
		dead.worker.Stop()
	}
}

const statsEvery = 3 * time.Second

// RedriveResult is what a Redrive did.
type RedriveResult struct {
	Redriven int
	Failures []deadletter.Failure
}

// Redrive republishes the consumer's dead letters at seqs (all when empty)
// to their original subjects.
func (dead *deadLetters) Redrive(ctx context.Context, stream, name string, seqs []uint64) (RedriveResult, error) {
	_, done, err := dead.binder.consumer(ctx, stream, name)
	if err != nil {
		return RedriveResult{}, err
	}
	defer done()
	route, ok := dead.routes[consumerKey{stream, name}]
	if !ok {
		return RedriveResult{}, fmt.Errorf("%w: consumer %q of stream %q has no dead_letter in this gateway's configuration", errs.ErrNoDeadLetter, name, stream)
	}
	n, fails, err := deadletter.Redrive(ctx, dead.js, route, seqs, func(ctx context.Context, subject string) error {
		return dead.publisher.publishTarget(ctx, stream, subject)
	})
	if ctx.Err() != nil {
		return RedriveResult{}, ctx.Err()
	}
	return RedriveResult{Redriven: n, Failures: fails}, err
}

// startDeadLetters starts the worker that copies the dead letters of the
// consumers with a dead_letter.
func (dead *deadLetters) start(ctx context.Context, cs []consumer.Config) error {
	var routes []deadletter.Route
	for _, cfg := range cs {
		dl := cfg.DeadLetter
		if dl == nil {
			continue
		}
		route, err := deadletter.Resolve(ctx, dead.js, deadletter.Route{Stream: cfg.Stream, Consumer: cfg.Name, Subject: dl.Subject, OnTerm: dl.OnTerm})
		if err != nil {
			return err
		}
		dead.routes[consumerKey{cfg.Stream, cfg.Name}] = route
		dead.metrics.watchDeadLetters(cfg.Stream, cfg.Name)
		routes = append(routes, route)
	}
	if len(routes) == 0 {
		return nil
	}
	var err error
	dead.worker, err = deadletter.Start(ctx, deadletter.Options{
		JS: dead.js, Routes: routes, Replicas: dead.stateReplicas, Log: dead.log, Copied: dead.metrics.deadLetters,
	})
	return err
}
