// Package server is jetgate's core: the gRPC services, the lease table, the
// token codec and the binding to NATS JetStream durable pull consumers.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// Options configure a Gateway.
type Options struct {
	// Conn is the NATS connection; the caller owns it and closes it after
	// the Gateway. Make it with nats.ReconnectBufSize(-1), so that nothing
	// is buffered while it reconnects (the gateway checks too, but a check
	// cannot close the race).
	Conn *nats.Conn
	// Consumers are the durable consumers to create or update and serve.
	Consumers []ConsumerConfig
	// Keys sign and verify tokens; replicas must share them.
	Keys *Keyring
	// RequestTimeout bounds each NATS request (settles, forwards, info).
	RequestTimeout time.Duration
	// MaxBatch is the largest Fetch batch accepted.
	MaxBatch int
	// MaxExpires caps a Fetch's expires.
	MaxExpires time.Duration
	// Metrics registers the gateway's Prometheus metrics; nil keeps them
	// unregistered.
	Metrics prometheus.Registerer
	Logger  *slog.Logger
}

// Defaults for Options left zero.
const (
	DefaultRequestTimeout = 5 * time.Second
	DefaultMaxBatch       = 1000
	DefaultMaxExpires     = 30 * time.Second
	DefaultExpires        = 5 * time.Second
	MaxTokens             = 1000
)

type bindingKey struct{ stream, consumer string }

// Gateway fronts durable consumers: it leases their messages, settles them,
// and forwards settles of leases other replicas hold.
type Gateway struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	self     GatewayID
	keys     *Keyring
	inbox    *inbox
	bindings map[bindingKey]*binding
	streams  *streamSubjects
	timeout  time.Duration
	maxBatch int
	maxExp   time.Duration
	log      *slog.Logger
	metrics  *metrics

	fwdSub *nats.Subscription
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
}

// New binds the configured consumers (creating or updating them) and starts
// serving settles forwarded by other replicas.
func New(ctx context.Context, o Options) (*Gateway, error) {
	if o.Conn == nil {
		return nil, errors.New("server: no NATS connection")
	}
	if o.Keys == nil {
		return nil, errors.New("server: no token keys")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	js, err := jetstream.New(o.Conn)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	g := &Gateway{
		nc:       o.Conn,
		js:       js,
		self:     NewGatewayID(),
		keys:     o.Keys,
		bindings: make(map[bindingKey]*binding),
		timeout:  orDefault(o.RequestTimeout, DefaultRequestTimeout),
		maxBatch: orDefault(o.MaxBatch, DefaultMaxBatch),
		maxExp:   orDefault(o.MaxExpires, DefaultMaxExpires),
		log:      o.Logger,
	}
	reg := o.Metrics
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	g.metrics = newMetrics(reg)
	g.streams = newStreamSubjects(js)
	if g.inbox, err = newInbox(o.Conn); err != nil {
		return nil, err
	}
	for _, c := range o.Consumers {
		cons, err := bootstrap(ctx, js, c)
		if err != nil {
			_ = g.inbox.stop()
			return nil, err
		}
		if err := g.streams.load(ctx, c.Stream); err != nil {
			_ = g.inbox.stop()
			return nil, err
		}
		b := newBinding(cons, o.Conn, g.inbox, g.keys, g.self, g.timeout, g.log, g.metrics)
		g.metrics.watch(reg, b)
		g.bindings[bindingKey{c.Stream, c.Name}] = b
	}
	if g.fwdSub, err = o.Conn.Subscribe(forwardSubject(g.self), g.onForward); err != nil {
		_ = g.inbox.stop()
		return nil, fmt.Errorf("subscribe forward subject: %w", err)
	}
	// Make sure the subscriptions are in place before anyone is told our id.
	if err := o.Conn.FlushTimeout(g.timeout); err != nil {
		_ = g.fwdSub.Unsubscribe()
		_ = g.inbox.stop()
		return nil, fmt.Errorf("flush subscriptions: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	for _, b := range g.bindings {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			b.run(runCtx)
		}()
	}
	g.log.Info("gateway bound", "gateway_id", g.self.String(), "consumers", len(g.bindings))
	return g, nil
}

func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// ID is this process's gateway id, the issuer named in its tokens.
func (g *Gateway) ID() GatewayID { return g.self }

// Ready reports whether the gateway can serve: NATS connected.
func (g *Gateway) Ready() error {
	if !g.nc.IsConnected() {
		return fmt.Errorf("%w: NATS connection is %v", ErrUnavailable, g.nc.Status())
	}
	return nil
}

// Close stops forwarding and background work and waits for it to end, then
// naks back the messages that canceled Fetches left (those whose pull has
// ended), so that they are redelivered at once rather than after ack_wait.
// Pulls still open on the server end by themselves at their expiry.
func (g *Gateway) Close() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	g.mu.Unlock()
	_ = g.fwdSub.Unsubscribe()
	g.cancel()
	g.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	for _, b := range g.bindings {
		b.nakOrphans(ctx, time.Now(), true)
	}
	_ = g.inbox.stop()
}

func (g *Gateway) binding(stream, consumer string) (*binding, error) {
	b, ok := g.bindings[bindingKey{stream, consumer}]
	if !ok {
		return nil, fmt.Errorf("%w: this gateway does not serve consumer %q of stream %q", ErrConsumerNotFound, consumer, stream)
	}
	return b, nil
}

// Fetch leases up to req.Batch messages of a consumer.
func (g *Gateway) Fetch(ctx context.Context, stream, consumer string, req FetchRequest) (FetchResult, error) {
	b, err := g.binding(stream, consumer)
	if err != nil {
		return FetchResult{}, err
	}
	res, err := b.fetch(ctx, req)
	if err == nil {
		g.metrics.fetch(b, res)
	}
	return res, err
}

// ConsumerStatus is a consumer's info from the server and this gateway's
// count of live leases on it.
type ConsumerStatus struct {
	Info          *jetstream.ConsumerInfo
	GatewayLeases int
}

// Consumer returns the consumer's configuration and state.
func (g *Gateway) Consumer(ctx context.Context, stream, consumer string) (ConsumerStatus, error) {
	b, err := g.binding(stream, consumer)
	if err != nil {
		return ConsumerStatus{}, err
	}
	ictx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	ci, err := b.cons.Info(ictx)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return ConsumerStatus{}, fmt.Errorf("%w: consumer %q of stream %q was deleted", ErrConsumerNotFound, consumer, stream)
	case ctx.Err() != nil:
		return ConsumerStatus{}, ctx.Err()
	case err != nil:
		return ConsumerStatus{}, fmt.Errorf("%w: consumer info: %v", ErrUnavailable, err)
	}
	return ConsumerStatus{Info: ci, GatewayLeases: b.leases.live()}, nil
}
