package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/natsname"
)

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
func (r *Replica) bound(stream, name string) *consumer.Consumer {
	r.binds.mu.RLock()
	defer r.binds.mu.RUnlock()
	if b := r.binds.m[consumerKey{stream, name}]; b != nil {
		return b.c
	}
	return nil
}

// all is every consumer the replica serves now.
func (r *Replica) all() []*binding {
	r.binds.mu.RLock()
	defer r.binds.mu.RUnlock()
	out := make([]*binding, 0, len(r.binds.m))
	for _, b := range r.binds.m {
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
func (r *Replica) consumer(ctx context.Context, stream, name string) (c *consumer.Consumer, done func(), err error) {
	key := consumerKey{stream, name}
	for {
		r.binds.mu.RLock()
		b := r.binds.m[key]
		if b != nil {
			b.calls.Add(1) // under the lock: unbind sees it
		}
		r.binds.mu.RUnlock()
		if b != nil {
			b.used.Store(time.Now().UnixNano())
			return b.c, func() {
				b.used.Store(time.Now().UnixNano())
				b.calls.Add(-1)
			}, nil
		}
		if err := r.bindOnDemand(ctx, key); err != nil {
			return nil, nil, err
		}
	}
}

func notServed(key consumerKey) error {
	return fmt.Errorf("%w: this gateway does not serve consumer %q of stream %q", errs.ErrConsumerNotFound, key.name, key.stream)
}

// bindOnDemand binds the consumer key names if it matches the on-demand
// patterns; concurrent first calls share one bind.
func (r *Replica) bindOnDemand(ctx context.Context, key consumerKey) error {
	if !r.onDemand.Matches(key.stream, key.name) || natsname.Internal(key.stream) {
		return notServed(key)
	}
	r.binds.mu.Lock()
	if b := r.binds.m[key]; b != nil {
		r.binds.mu.Unlock()
		return nil
	}
	fc, shared := r.binds.binding[key]
	if !shared {
		fc = &firstCall{done: make(chan struct{})}
		r.binds.binding[key] = fc
	}
	r.binds.mu.Unlock()
	if !shared {
		// Not the caller's ctx: a first caller that leaves must not fail
		// the others sharing its bind.
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.timeout)
		fc.err = r.attach(bctx, key)
		cancel()
		r.binds.mu.Lock()
		delete(r.binds.binding, key)
		r.binds.mu.Unlock()
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
func (r *Replica) attach(ctx context.Context, key consumerKey) error {
	s, err := r.stream(ctx, key.stream)
	if err != nil {
		return err
	}
	c, err := consumer.Attach(ctx, s, key.name, r.deps(key))
	if errors.Is(err, consumer.ErrUnservable) && r.binds.refusedNew(key, err.Error()) {
		r.log.Warn("an on-demand consumer matched, but jetgate cannot serve it", "stream", key.stream, "consumer", key.name, "reason", err.Error())
	}
	if err != nil {
		return err
	}
	if r.serve(c, true) == nil {
		return fmt.Errorf("%w: the gateway is shutting down", errs.ErrUnavailable)
	}
	r.log.Info("bound a consumer on demand", "stream", key.stream, "consumer", key.name)
	select {
	case r.binds.changed <- struct{}{}:
	default:
	}
	return nil
}

// stream is stream name's handle, looked up once.
func (r *Replica) stream(ctx context.Context, name string) (jetstream.Stream, error) {
	r.binds.mu.RLock()
	s := r.binds.streams[name]
	r.binds.mu.RUnlock()
	if s != nil {
		return s, nil
	}
	s, err := r.js.Stream(ctx, name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, fmt.Errorf("%w: stream %q does not exist", errs.ErrConsumerNotFound, name)
	case err != nil:
		return nil, fmt.Errorf("%w: look up stream %q: %v", errs.ErrUnavailable, name, err)
	}
	r.binds.mu.Lock()
	r.binds.streams[name] = s
	r.binds.mu.Unlock()
	return s, nil
}

// deps are what the consumer key shares with the replica.
func (r *Replica) deps(key consumerKey) consumer.Deps {
	d := r.consumerDeps
	d.OnReset = r.tellReset(key.stream, key.name)
	return d
}

// serve adds c to the consumers the replica serves and starts its Run; nil
// once the replica is closing.
func (r *Replica) serve(c *consumer.Consumer, onDemand bool) *binding {
	rctx, stop := context.WithCancel(r.runCtx)
	b := &binding{c: c, onDemand: onDemand, stop: stop, done: make(chan struct{})}
	b.used.Store(time.Now().UnixNano())
	r.binds.mu.Lock()
	r.binds.m[consumerKey{c.Stream, c.Name}] = b
	r.binds.mu.Unlock()
	if r.roster != nil {
		r.roster.Join(c.Stream, c.Name, c.SetReplicas)
	}
	if !r.goUnlessClosed(func() {
		defer close(b.done)
		c.Run(rctx)
	}) {
		stop()
		close(b.done)
		r.binds.mu.Lock()
		delete(r.binds.m, consumerKey{c.Stream, c.Name})
		r.binds.mu.Unlock()
		return nil
	}
	return b
}

// goUnlessClosed runs f on a goroutine Close waits for, unless the replica
// is closing (then Close may be waiting already).
func (r *Replica) goUnlessClosed(f func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.wg.Go(f)
	return true
}

// unbind stops serving an on-demand consumer, if when says so of its
// binding (under the lock that a call takes to use it).
func (r *Replica) unbind(ctx context.Context, key consumerKey, why string, when func(*binding) bool) {
	r.binds.mu.Lock()
	b := r.binds.m[key]
	if b == nil || !b.onDemand || !when(b) {
		r.binds.mu.Unlock()
		return
	}
	delete(r.binds.m, key)
	r.binds.mu.Unlock()
	if r.roster != nil {
		r.roster.Leave(key.stream, key.name)
	}
	b.stop()
	<-b.done
	b.c.Close(ctx)
	r.metrics.unwatch(b.c)
	r.log.Info("unbound a consumer served on demand ("+why+")", "stream", key.stream, "consumer", key.name)
}

// unbindIdle unbinds the on-demand consumers nobody called for IdleUnbind
// that hold nothing, until ctx ends. Its timer runs only while some are
// bound.
func (r *Replica) unbindIdle(ctx context.Context) {
	idle := r.onDemand.IdleUnbind
	every := max(min(idle/4, time.Minute), 10*time.Millisecond)
	for {
		if !r.anyOnDemand() {
			select {
			case <-ctx.Done():
				return
			case <-r.binds.changed:
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
			for _, b := range r.all() {
				if b.onDemand {
					r.unbind(ctx, consumerKey{b.c.Stream, b.c.Name}, "idle", unused)
				}
			}
		}
	}
}

func (r *Replica) anyOnDemand() bool {
	r.binds.mu.RLock()
	defer r.binds.mu.RUnlock()
	for _, b := range r.binds.m {
		if b.onDemand {
			return true
		}
	}
	return false
}

// boundCounts are how many consumers the replica serves, from its
// configuration and on demand.
func (r *Replica) boundCounts() (config, onDemand int) {
	r.binds.mu.RLock()
	defer r.binds.mu.RUnlock()
	for _, b := range r.binds.m {
		if b.onDemand {
			onDemand++
		} else {
			config++
		}
	}
	return config, onDemand
}
