package replica

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/push"
	"github.com/jetgate/jetgate/internal/tracing"
)

// pushers are the replica's pushers, by consumer.
type pushers struct {
	*env
	binder *binder
	// by holds the pushers that run, published once start has them all:
	// the relay's pause advisories read it from the bind on.
	by   atomic.Pointer[map[consumerKey]*push.Pusher]
	stop sync.Once
}

// all is the pushers that run, by consumer (none before start).
func (ps *pushers) all() map[consumerKey]*push.Pusher {
	if by := ps.by.Load(); by != nil {
		return *by
	}
	return nil
}

// startPushers starts a pusher for each consumer with a push block; they
// run until StopPush or the replica's close.
func (ps *pushers) start(runCtx context.Context, cfgs []push.Config, reg prometheus.Registerer, trc *tracing.Tracing) error {
	if len(cfgs) == 0 {
		return nil
	}
	m := push.NewMetrics(reg)
	made := make(map[consumerKey]*push.Pusher, len(cfgs))
	for _, cfg := range cfgs {
		key := consumerKey{cfg.Stream, cfg.Consumer}
		c := ps.binder.bound(key.stream, key.name)
		if c == nil {
			return fmt.Errorf("push of %s/%s: the consumer is not configured", cfg.Stream, cfg.Consumer)
		}
		p, err := push.New(cfg.WithDefaults(), c, m, ps.log, trc)
		if err != nil {
			return err
		}
		made[key] = p
	}
	// Only pushers that run are kept: StopPush waits for each one's Run
	// to return (one of a later block that could not be made, left
	// unrun, hung the replica's close for ever).
	by := make(map[consumerKey]*push.Pusher, len(made))
	for key, p := range made {
		if ps.run.Go(func() { p.Run(runCtx) }) {
			by[key] = p
		}
	}
	ps.by.Store(&by)
	for _, p := range by {
		p.PauseChanged() // an advisory before the map was published was not told to it
	}
	return nil
}

// StopPush stops every pusher: no more pulls or pushes, those in flight
// finish until ctx ends, and what is left is nak'ed back for another
// replica to push at once. The replica serves on otherwise.
func (ps *pushers) StopPush(ctx context.Context) {
	ps.stop.Do(func() {
		var wg sync.WaitGroup
		for _, p := range ps.all() {
			wg.Go(func() { p.Stop(ctx) })
		}
		wg.Wait()
	})
}

// paused tells the pusher of a consumer, if any, that it was paused or
// resumed.
func (ps *pushers) paused(key consumerKey) {
	if p, ok := ps.all()[key]; ok {
		p.PauseChanged()
	}
}

// pushState is c's pusher's state, nil when c is not pushed.
func (ps *pushers) pushState(c *consumer.Consumer) *push.State {
	p, ok := ps.all()[consumerKey{c.Stream, c.Name}]
	if !ok {
		return nil
	}
	st := p.State()
	return &st
}
