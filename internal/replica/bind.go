package replica

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/natsname"
)

// binder binds the consumers a replica serves: the configured ones at
// start, on-demand ones at their first call, and unbinds those.
type binder struct {
	*env
	binds    *bindings
	onDemand consumer.OnDemand
	admin    *consumer.Admin // consumers created through the API; nil: none
	shared   consumer.Deps   // what every consumer shares with the replica
}

// bindConcurrency bounds the configured consumers bound at once at start.
const bindConcurrency = 16

func newBinder(e *env, od consumer.OnDemand, admin *consumer.Admin) *binder {
	if od.IdleUnbind <= 0 {
		od.IdleUnbind = consumer.DefaultIdleUnbind
	}
	return &binder{env: e, binds: newBindings(), onDemand: od, admin: admin}
}

// bindConfigured binds the configured consumers, a few at once.
func (bd *binder) bindConfigured(ctx context.Context, cs []consumer.Config) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(bindConcurrency)
	for _, cfg := range cs {
		g.Go(func() error {
			s, err := bd.stream(gctx, cfg.Stream)
			if err != nil {
				return fmt.Errorf("stream %q of consumer %q: %w", cfg.Stream, cfg.Name, err)
			}
			c, err := consumer.BindIn(gctx, s, cfg, bd.shared)
			if err != nil {
				return err
			}
			bd.serve(c, false)
			return nil
		})
	}
	return g.Wait()
}

// binding is a consumer the replica serves.
type binding struct {
	c        *consumer.Consumer
	onDemand bool
	stop     context.CancelFunc // ends its Run
	done     chan struct{}      // closed when its Run returned
	used     atomic.Int64       // unix ns of the last call's start or end
	calls    atomic.Int64       // calls in progress
}

// bindings are the consumers a replica serves, and the first calls of
// on-demand ones being bound.
type bindings struct {
	mu      sync.RWMutex
	m       map[consumerKey]*binding
	binding map[consumerKey]*firstCall
	streams map[string]jetstream.Stream // looked up once, for on-demand binds
	refused map[consumerKey]string      // the last refusal of each, logged once
	changed chan struct{}               // an on-demand binding came: the unbinder attends
}

// firstCall is an on-demand bind in progress, which concurrent first calls
// share.
type firstCall struct {
	done chan struct{}
	err  error
}

func newBindings() *bindings {
	return &bindings{
		m:       make(map[consumerKey]*binding),
		binding: make(map[consumerKey]*firstCall),
		streams: make(map[string]jetstream.Stream),
		refused: make(map[consumerKey]string),
		changed: make(chan struct{}, 1),
	}
}

// bound is the consumer stream/name if the replica serves it now (nil if
// not), binding nothing.
func (bd *binder) bound(stream, name string) *consumer.Consumer {
	bd.binds.mu.RLock()
	defer bd.binds.mu.RUnlock()
	if b := bd.binds.m[consumerKey{stream, name}]; b != nil {
		return b.c
	}
	return nil
}

// all is every consumer the replica serves now.
func (bd *binder) all() []*binding {
	bd.binds.mu.RLock()
	defer bd.binds.mu.RUnlock()
	out := make([]*binding, 0, len(bd.binds.m))
	for _, b := range bd.binds.m {
		out = append(out, b)
	}
	return out
}

// maxRefused bounds the refusals remembered for logging once.
const maxRefused = 1024

// refusedNew records why key cannot be served and reports whether that is
// news, to be logged: not on every call of a caller who retries.
func (b *bindings) refusedNew(key consumerKey, why string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.refused[key] == why {
		return false
	}
	if len(b.refused) >= maxRefused {
		clear(b.refused)
	}
	b.refused[key] = why
	return true
}

// consumer is the consumer a call names, bound on demand if it matches; the
// call must call done when it ends.
func (bd *binder) consumer(ctx context.Context, stream, name string) (c *consumer.Consumer, done func(), err error) {
	key := consumerKey{stream, name}
	for {
		bd.binds.mu.RLock()
		b := bd.binds.m[key]
		if b != nil {
			b.calls.Add(1) // under the lock: unbind sees it
		}
		bd.binds.mu.RUnlock()
		if b != nil {
			b.used.Store(time.Now().UnixNano())
			return b.c, func() {
				b.used.Store(time.Now().UnixNano())
				b.calls.Add(-1)
			}, nil
		}
		if err := bd.bindOnDemand(ctx, key); err != nil {
			return nil, nil, err
		}
	}
}

// errStopping refuses a caller's Fetch, Consume or settle once the replica
// is closing (env.closing): the caller retries on another replica. Forwards
// served as the close began are served still; later ones find no responder.
var errStopping = fmt.Errorf("%w: retry through another replica, or once it has started again", errs.ErrStopping)

func notServed(key consumerKey) error {
	return fmt.Errorf("%w: this gateway does not serve consumer %q of stream %q", errs.ErrConsumerNotFound, key.name, key.stream)
}

// bindOnDemand binds the consumer key names if it matches the on-demand
// patterns; concurrent first calls share one bind.
func (bd *binder) bindOnDemand(ctx context.Context, key consumerKey) error {
	if !bd.onDemand.Matches(key.stream, key.name) && !bd.admin.Matches(key.stream, key.name) || natsname.Internal(key.stream) {
		return notServed(key)
	}
	bd.binds.mu.Lock()
	if b := bd.binds.m[key]; b != nil {
		bd.binds.mu.Unlock()
		return nil
	}
	fc, shared := bd.binds.binding[key]
	if !shared {
		fc = &firstCall{done: make(chan struct{})}
		bd.binds.binding[key] = fc
	}
	bd.binds.mu.Unlock()
	if !shared {
		// Not the caller's ctx: a first caller that leaves must not fail
		// the others sharing its bind.
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bd.timeout)
		fc.err = bd.attach(bctx, key)
		cancel()
		bd.binds.mu.Lock()
		delete(bd.binds.binding, key)
		bd.binds.mu.Unlock()
		close(fc.done)
	}
	select {
	case <-fc.done:
		return fc.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// attach looks the consumer up and starts serving it.
func (bd *binder) attach(ctx context.Context, key consumerKey) error {
	s, err := bd.stream(ctx, key.stream)
	if errors.Is(err, errs.ErrStreamNotFound) {
		return fmt.Errorf("%w: stream %q does not exist", errs.ErrConsumerNotFound, key.stream) // no consumer of it either
	}
	if err != nil {
		return err
	}
	if !bd.onDemand.Matches(key.stream, key.name) {
		if err := bd.createdByAPI(ctx, s, key); err != nil {
			return err
		}
	}
	c, err := consumer.Attach(ctx, s, key.name, bd.shared)
	if errors.Is(err, consumer.ErrUnservable) && bd.binds.refusedNew(key, err.Error()) {
		bd.log.Warn("an on-demand consumer matched, but jetgate cannot serve it", "stream", key.stream, "consumer", key.name, "reason", err.Error())
	}
	if err != nil {
		return err
	}
	if bd.serve(c, true) == nil {
		return errStopping
	}
	bd.log.Info("bound a consumer on demand", "stream", key.stream, "consumer", key.name)
	select {
	case bd.binds.changed <- struct{}{}:
	default:
	}
	return nil
}

// createdByAPI checks that a consumer the on-demand patterns do not name,
// only the admin block's, was created through the API: the admin block
// serves those, not every consumer operators make under its patterns.
func (bd *binder) createdByAPI(ctx context.Context, s jetstream.Stream, key consumerKey) error {
	cons, err := s.Consumer(ctx, key.name)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return fmt.Errorf("%w: stream %q has no consumer %q", errs.ErrConsumerNotFound, key.stream, key.name)
	case err != nil:
		return fmt.Errorf("%w: look up consumer %q of stream %q: %v", errs.ErrUnavailable, key.name, key.stream, err)
	case cons.CachedInfo().Config.Metadata[consumer.CreatedBy] == "":
		return notServed(key)
	}
	return nil
}

// configured reports whether stream/name is one of the gateway's file.
func (bd *binder) configured(stream, name string) bool {
	bd.binds.mu.RLock()
	defer bd.binds.mu.RUnlock()
	b := bd.binds.m[consumerKey{stream, name}]
	return b != nil && !b.onDemand
}

// stream is stream name's handle, looked up once.
func (bd *binder) stream(ctx context.Context, name string) (jetstream.Stream, error) {
	bd.binds.mu.RLock()
	s := bd.binds.streams[name]
	bd.binds.mu.RUnlock()
	if s != nil {
		return s, nil
	}
	s, err := bd.js.Stream(ctx, name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, fmt.Errorf("%w: stream %q does not exist", errs.ErrStreamNotFound, name)
	case err != nil:
		return nil, fmt.Errorf("%w: look up stream %q: %v", errs.ErrUnavailable, name, err)
	}
	bd.binds.mu.Lock()
	bd.binds.streams[name] = s
	bd.binds.mu.Unlock()
	return s, nil
}

// serve adds c to the consumers the replica serves and starts its Run; nil
// once the replica is closing.
func (bd *binder) serve(c *consumer.Consumer, onDemand bool) *binding {
	rctx, stop := context.WithCancel(bd.run.ctx)
	b := &binding{c: c, onDemand: onDemand, stop: stop, done: make(chan struct{})}
	b.used.Store(time.Now().UnixNano())
	var counted func()
	if bd.roster != nil {
		// Before any caller can reach it: its peers count it once the roster
		// is stored.
		counted = c.HoldUntilCounted()
	}
	// The roster's membership changes with the map, under its lock: an
	// unbind's Leave after a new bind's Join would undo it.
	bd.binds.mu.Lock()
	bd.binds.m[consumerKey{c.Stream, c.Name}] = b
	if bd.roster != nil {
		bd.roster.Join(c.Stream, c.Name, c.SetReplicas, counted)
	}
	bd.binds.mu.Unlock()
	if !bd.run.Go(func() {
		defer close(b.done)
		c.Run(rctx)
	}) {
		stop()
		close(b.done)
		bd.binds.mu.Lock()
		delete(bd.binds.m, consumerKey{c.Stream, c.Name})
		if bd.roster != nil {
			bd.roster.Leave(c.Stream, c.Name)
		}
		bd.binds.mu.Unlock()
		return nil
	}
	return b
}

// unbind stops serving an on-demand consumer, if when says so of its
// binding (under the lock that a call takes to use it).
func (bd *binder) unbind(ctx context.Context, key consumerKey, why string, when func(*binding) bool) {
	bd.binds.mu.Lock()
	b := bd.binds.m[key]
	if b == nil || !b.onDemand || !when(b) {
		bd.binds.mu.Unlock()
		return
	}
	delete(bd.binds.m, key)
	if bd.roster != nil {
		bd.roster.Leave(key.stream, key.name)
	}
	bd.binds.mu.Unlock()
	b.stop()
	<-b.done
	b.c.Close(ctx)
	bd.metrics.unwatch(b.c)
	bd.log.Info("unbound a consumer served on demand ("+why+")", "stream", key.stream, "consumer", key.name)
}

// unbindIdle unbinds the on-demand consumers nobody called for IdleUnbind
// that hold nothing, until ctx ends. Its timer runs only while some are
// bound.
func (bd *binder) unbindIdle(ctx context.Context) {
	idle := bd.onDemand.IdleUnbind
	every := max(min(idle/4, time.Minute), 10*time.Millisecond)
	for {
		if !bd.anyOnDemand() {
			select {
			case <-ctx.Done():
				return
			case <-bd.binds.changed:
				continue
			}
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case now := <-t.C:
			unused := func(b *binding) bool {
				return b.calls.Load() == 0 && now.Sub(time.Unix(0, b.used.Load())) >= idle && b.c.Idle()
			}
			for _, b := range bd.all() {
				if b.onDemand {
					bd.unbind(ctx, consumerKey{b.c.Stream, b.c.Name}, "idle", unused)
				}
			}
		}
	}
}

func (bd *binder) anyOnDemand() bool {
	bd.binds.mu.RLock()
	defer bd.binds.mu.RUnlock()
	for _, b := range bd.binds.m {
		if b.onDemand {
			return true
		}
	}
	return false
}

// boundCounts are how many consumers the replica serves, from its
// configuration and on demand.
func (bd *binder) boundCounts() (config, onDemand int) {
	bd.binds.mu.RLock()
	defer bd.binds.mu.RUnlock()
	for _, b := range bd.binds.m {
		if b.onDemand {
			onDemand++
		} else {
			config++
		}
	}
	return config, onDemand
}
