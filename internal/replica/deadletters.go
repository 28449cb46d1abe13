package replica

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/deadletter"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/settle"
)

// deadLetters copy the letters of consumers with a dead_letter into its
// stream (the worker), record the Terms of those with on_term, list them and
// redrive them.
type deadLetters struct {
	*env
	binder    *binder
	publisher *publisher
	routes    map[consumerKey]deadletter.Route // consumers with a dead letter
	worker    *deadletter.Worker               // nil when none has
	// onTerm holds the consumers with dead_letter.on_term, whose Terms are
	// recorded; set before any consumer is bound, and never changed.
	onTerm map[consumerKey]bool
	// served is the JetStream domain served, as advisories name it; set
	// as the replica opens, before any consumer is bound.
	served string
	// unstored counts, by consumer, the Terms confirmed whose record is
	// being tried again (recordAgain).
	unstoredMu sync.Mutex
	unstored   map[consumerKey]int
	allStored  chan struct{} // closed as unstored empties; nil: none waits
}

// newDeadLetters is the dead letters of the consumers cs.
func newDeadLetters(e *env, b *binder, p *publisher, cs []consumer.Config) *deadLetters {
	dead := &deadLetters{env: e, binder: b, publisher: p, routes: make(map[consumerKey]deadletter.Route), onTerm: make(map[consumerKey]bool)}
	for _, cfg := range cs {
		if cfg.DeadLetter != nil && cfg.DeadLetter.OnTerm {
			dead.onTerm[consumerKey{cfg.Stream, cfg.Name}] = true
		}
	}
	return dead
}

// recordTerms records the Terms the server confirmed of a consumer with
// on_term (deadletter.RecordTerms), waiting at most the request timeout,
// past ctx's end too: the Term is done. A record not stored then (NATS is
// away: the restart that may also drop the server's advisory) is tried
// again in the background (recordAgain).
func (dead *deadLetters) recordTerms(ctx context.Context, stream, name, reason string, ds []lease.Ref) {
	if !dead.onTerm[consumerKey{stream, name}] {
		return
	}
	ts := make([]deadletter.Termed, len(ds))
	for i, d := range ds {
		ts[i] = deadletter.Termed{StreamSeq: d.StreamSeq, Deliveries: d.Delivered}
	}
	record := func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, dead.timeout)
		defer cancel()
		return deadletter.RecordTerms(ctx, dead.js, dead.served, stream, name, reason, ts)
	}
	err := record(context.WithoutCancel(ctx))
	if err == nil {
		return
	}
	notStored := func(err error) {
		dead.log.Warn("the record of a Term was not stored: its dead letter rests on the server's advisory alone",
			"stream", stream, "consumer", name, "terms", len(ts), "err", err)
	}
	k := consumerKey{stream, name}
	dead.countUnstored(k, len(ts))
	if !dead.run.Go(func() {
		defer dead.countUnstored(k, -len(ts))
		dead.recordAgain(record, err, notStored)
	}) {
		dead.countUnstored(k, -len(ts))
		notStored(err) // the replica is closing
	}
}

// countUnstored adds n to the Terms of k whose record is being tried again.
func (dead *deadLetters) countUnstored(k consumerKey, n int) {
	dead.unstoredMu.Lock()
	defer dead.unstoredMu.Unlock()
	if dead.unstored == nil {
		dead.unstored = make(map[consumerKey]int)
	}
	if dead.unstored[k] += n; dead.unstored[k] == 0 {
		delete(dead.unstored, k)
	}
	if len(dead.unstored) == 0 && dead.allStored != nil {
		close(dead.allStored)
		dead.allStored = nil
	}
}

// waitStored waits until no Term's record is being tried again, or until
// ctx ends: a replica that stops gracefully gives the records its Terms
// left its time to stop.
func (dead *deadLetters) waitStored(ctx context.Context) {
	dead.unstoredMu.Lock()
	if len(dead.unstored) == 0 {
		dead.unstoredMu.Unlock()
		return
	}
	if dead.allStored == nil {
		dead.allStored = make(chan struct{})
	}
	stored := dead.allStored
	dead.unstoredMu.Unlock()
	select {
	case <-stored:
	case <-ctx.Done():
	}
}

// unstoredOf is how many Terms of the consumer name of stream have their
// record being tried again.
func (dead *deadLetters) unstoredOf(stream, name string) int {
	dead.unstoredMu.Lock()
	defer dead.unstoredMu.Unlock()
	return dead.unstored[consumerKey{stream, name}]
}

// recordFor bounds how long a Term's record is tried again: the worker's
// copies of the record and of the server's advisory are one dead letter
// only within the dead-letter stream's duplicate window (2 minutes by
// default).
const recordFor = time.Minute

// recordAgain tries record again, backing off, until it is stored, for up
// to recordFor or until the replica closes; then it tells notStored of the
// last error.
func (dead *deadLetters) recordAgain(record func(context.Context) error, err error, notStored func(error)) {
	end := time.Now().Add(recordFor)
	for wait := 100 * time.Millisecond; time.Now().Before(end); wait = min(2*wait, time.Second) {
		select {
		case <-dead.run.ctx.Done():
			notStored(err)
			return
		case <-time.After(wait):
		}
		if err = record(dead.run.ctx); err == nil {
			return
		}
	}
	notStored(err)
}

// stop stops the worker, waiting at most until ctx ends.
func (dead *deadLetters) stop(ctx context.Context) {
	if dead.worker != nil {
		dead.worker.Stop(ctx)
	}
}

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
func (dead *deadLetters) Redrive(ctx context.Context, stream, name string, seqs []uint64) (RedriveResult, error) {
	route, err := dead.route(ctx, stream, name)
	if err != nil {
		return RedriveResult{}, err
	}
	n, fails, err := deadletter.Redrive(ctx, dead.js, route, seqs, func(ctx context.Context, subject string) error {
		return dead.publisher.publishTarget(ctx, stream, subject)
	}, dead.publisher.republish)
	if ctx.Err() != nil {
		return RedriveResult{}, ctx.Err()
	}
	return RedriveResult{Redriven: n, Failures: fails}, err
}

// startDeadLetters starts the worker that copies the dead letters of the
// consumers with a dead_letter.
func (dead *deadLetters) start(ctx context.Context, cs []consumer.Config) error {
	var routes []deadletter.Route
	var plain [][2]string
	for _, cfg := range cs {
		dl := cfg.DeadLetter
		if dl == nil {
			plain = append(plain, [2]string{cfg.Stream, cfg.Name})
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
	// The ledger's bucket, opened before, holds the advisory stream's
	// agreed subjects too.
	agreed, err := dead.js.KeyValue(ctx, settle.LedgerBucket)
	if err != nil {
		return fmt.Errorf("the KV bucket %s: %w", settle.LedgerBucket, err)
	}
	dead.worker, err = deadletter.Start(ctx, deadletter.Options{
		JS: dead.js, Routes: routes, Replicas: dead.stateReplicas, Log: dead.log, Copied: dead.metrics.deadLetters, Agreed: agreed, Domain: dead.served, Plain: plain,
	})
	if err != nil {
		return err
	}
	for key := range dead.onTerm {
		pctx, cancel := context.WithTimeout(ctx, dead.timeout)
		err := deadletter.ProbeRecords(pctx, dead.js, key.stream, key.name)
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}
