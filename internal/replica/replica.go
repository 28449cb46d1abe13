// Package replica is one jetgate replica: the consumers it serves, the settles
// it forwards to other replicas and takes from them, and Publish. The gRPC
// face (server/) calls it; it combines the per-consumer objects of package
// consumer with the settle path of package settle.
package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/goroutines"
	"github.com/jetgate/jetgate/internal/pull"
	"github.com/jetgate/jetgate/internal/push"
	"github.com/jetgate/jetgate/internal/roster"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
	"github.com/jetgate/jetgate/internal/tracing"
)

// Options configure a Replica.
type Options struct {
	// Conn is the NATS connection; the caller owns it and closes it after
	// the Replica. Make it with nats.ReconnectBufSize(-1), so that nothing
	// is buffered while it reconnects (the replica checks too, but a check
	// cannot close the race).
	Conn *nats.Conn
	// Consumers are the durable consumers to create or update and serve.
	Consumers []consumer.Config
	// Pushes are the push blocks of those consumers that are pushed.
	Pushes []push.Config
	// Keys sign and verify tokens; replicas must share them.
	Keys *token.Keyring
	// RequestTimeout bounds each NATS request (settles, forwards, info).
	RequestTimeout time.Duration
	// MaxBatch is the largest Fetch batch accepted.
	MaxBatch int
	// MaxExpires caps a Fetch's expires.
	MaxExpires time.Duration
	// MaxNakDelay bounds a Nak's delay; 0 is consumer.DefaultMaxNakDelay.
	MaxNakDelay time.Duration
	// MaxLease bounds how long one lease is kept alive: by an Extend's
	// duration, or a Consume's auto_extend; 0 is consumer.DefaultMaxLease.
	MaxLease time.Duration
	// MaxFetchBytes bounds the bytes one Fetch pulls and returns; 0 is
	// consumer.DefaultMaxFetchBytes.
	MaxFetchBytes int64
	// Metrics registers the replica's Prometheus metrics; nil keeps them
	// unregistered.
	Metrics prometheus.Registerer
	Logger  *slog.Logger
	// Tracing records spans; nil is off.
	Tracing *tracing.Tracing
	// OnDemand serves existing consumers the configuration does not name.
	OnDemand consumer.OnDemand
	// Admin lets callers create, update and delete consumers through the
	// API within its bounds; nil: off.
	Admin *consumer.Admin
	// Domain is the JetStream domain to reach JetStream through ($JS.<domain>.API,
	// from a leaf node to its hub, say); "" is the connection's own.
	Domain string
}

type consumerKey struct{ stream, name string }

// Replica fronts durable consumers: it leases their messages, settles them,
// and settles the leases other replicas hold by forwarding to them. It only
// composes its parts, each a type with its own state and file: the binder
// (bind.go: which consumers it serves, configured or on demand), the
// forwarder (settle.go: settles, and forwarding them to their issuers), the
// publisher (publish.go), the lister (list.go, status.go, leases.go: what
// callers may read of streams, consumers and leases), the dead letters
// (deadletters.go), the relay (events.go: what the server says of consumers,
// routed to the consumer it concerns), the pushers (push.go) and the
// manager (manage.go: pauses, pins, seeks and consumers through the API). What they
// share is the env, set once by New.
type Replica struct {
	*env
	*binder
	*forwarder
	*publisher
	*lister
	*deadLetters
	*relay
	*pushers
	*manager

	maxBatch int
	maxExp   time.Duration
	maxNak   time.Duration
	maxLease time.Duration

	ending     context.Context // ended by EndStreams
	endStreams context.CancelFunc
}

// env is what the parts of a replica share, set once by New: its
// connection, its identity and bounds, its logs, metrics and spans, and its
// run.
type env struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	self    token.IssuerID
	keys    *token.Keyring
	timeout time.Duration
	api     string // JetStream's API prefix, the domain's if one is set
	domain  string
	log     *slog.Logger
	metrics *metrics
	spans   *tracing.Spans // nil: tracing off
	roster  *roster.Roster
	// stateReplicas is the replica count of jetgate's own streams and KV
	// buckets.
	stateReplicas int
	run           *run
	closing       atomic.Bool // Close has begun: callers are refused (errStopping)
}

// run is a replica's life: the goroutines its parts start, which Close
// waits for (the consumers' Run loops and forwarded settles; none starts
// once the replica is closing), and the context that ends when it closes.
type run struct {
	ctx    context.Context
	cancel context.CancelFunc
	goroutines.Group
}

// New binds the configured consumers (creating or updating them) and starts
// serving settles forwarded by other replicas.
func New(ctx context.Context, o Options) (*Replica, error) {
	if o.Conn == nil {
		return nil, errors.New("core: no NATS connection")
	}
	if o.Keys == nil {
		return nil, errors.New("core: no token keys")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	js, err := jetstream.New(o.Conn)
	if o.Domain != "" {
		js, err = jetstream.NewWithDomain(o.Conn, o.Domain)
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	e := &env{
		nc:      o.Conn,
		js:      js,
		api:     pull.API(o.Domain),
		domain:  o.Domain,
		self:    token.NewIssuerID(),
		keys:    o.Keys,
		timeout: orDefault(o.RequestTimeout, consumer.DefaultRequestTimeout),
		log:     o.Logger,
		spans:   o.Tracing.Spans(),
		run:     &run{},
	}
	e.run.ctx, e.run.cancel = context.WithCancel(context.Background())
	r := &Replica{
		env:      e,
		maxBatch: orDefault(o.MaxBatch, consumer.DefaultMaxBatch),
		maxExp:   orDefault(o.MaxExpires, consumer.DefaultMaxExpires),
		maxNak:   orDefault(o.MaxNakDelay, consumer.DefaultMaxNakDelay),
		maxLease: orDefault(o.MaxLease, consumer.DefaultMaxLease),
	}
	r.ending, r.endStreams = context.WithCancel(context.Background())
	r.binder = newBinder(e, o.OnDemand, o.Admin)
	r.forwarder = &forwarder{env: e, binder: r.binder, slots: make(chan struct{}, maxForwardsInFlight)}
	r.publisher = &publisher{env: e, subjects: newStreamSubjects(js, e.timeout), admin: o.Admin, onDemand: o.OnDemand}
	r.deadLetters = newDeadLetters(e, r.binder, r.publisher, o.Consumers)
	r.pushers = &pushers{env: e, binder: r.binder}
	r.lister = &lister{env: e, binder: r.binder, pushers: r.pushers, deadLetters: r.deadLetters}
	r.relay = &relay{env: e, binder: r.binder, pushers: r.pushers}
	r.relay.wakes.begin(time.Now())
	r.forwarder.relay = r.relay
	r.manager = &manager{env: e, binder: r.binder}
	reg := o.Metrics
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	e.metrics = newMetrics(reg, r.binder, r.deadLetters)
	if e.stateReplicas, err = stateReplicas(ctx, js, o.Consumers); err != nil {
		r.Close()
		return nil, err
	}
	if err := r.open(ctx, o); err != nil {
		r.Close()
		return nil, err
	}
	if err := r.pushers.start(e.run.ctx, o.Pushes, reg, o.Tracing); err != nil {
		r.Close()
		return nil, err
	}
	e.run.Go(func() { r.binder.unbindIdle(e.run.ctx) })
	r.relay.wakes.tick(time.Now()) // a slow start is no gap
	r.relay.reconnects.Store(r.relay.spells())
	e.run.Go(func() { r.relay.wakes.watch(e.run.ctx) })
	e.run.Go(func() { r.relay.followReconnects(e.run.ctx) })
	r.log.Info("gateway bound", "gateway_id", r.self.String(), "consumers", len(o.Consumers))
	return r, nil
}

// open opens what the replica shares with others (the ledger, the sender,
// its subscriptions, the roster) and binds the configured consumers.
func (r *Replica) open(ctx context.Context, o Options) error {
	ledger, err := settle.OpenLedger(ctx, r.js, r.stateReplicas)
	if err != nil {
		return err
	}
	if r.forwarder.sender, err = settle.NewSender(o.Conn, r.timeout); err != nil {
		return err
	}
	r.binder.shared = consumer.Deps{
		Conn: o.Conn, Sender: r.forwarder.sender, Ledger: ledger, Keys: r.keys, Self: r.self,
		Timeout: r.timeout, Log: r.log, MaxFetchBytes: o.MaxFetchBytes, MaxLease: r.maxLease, API: r.api,
		Traced: o.Tracing.On(), Awake: r.relay.awake, CatchUp: r.relay.catchUp, Terminated: r.deadLetters.recordTerms,
		Peers: func(ctx context.Context, stream, consumer string) ([]string, error) {
			if r.roster == nil { // still opening: nothing is bound yet
				return nil, nil
			}
			return r.roster.Peers(ctx, stream, consumer)
		},
	}
	if r.relay.jsDomain, err = servedDomain(ctx, r.js, r.domain); err != nil {
		return err
	}
	r.deadLetters.served = r.relay.jsDomain
	r.relay.watchAPI = r.api
	if r.domain != "" {
		// A connection to a server of the domain itself sees the domain's
		// requests as $JS.API (its server maps the prefix before
		// delivering them).
		plain, err := jetstream.New(o.Conn)
		if err != nil {
			return err
		}
		switch own, err := servedDomain(ctx, plain, ""); {
		case err != nil:
			r.log.Warn("the connection's own JetStream domain could not be read ($JS.API.INFO): requests are watched under the configured domain's prefix, where a server of that domain delivers none",
				"domain", r.domain, "error", err)
		case own == r.domain:
			r.relay.watchAPI = pull.API("")
		}
	}
	if err := r.subscribe(); err != nil {
		return err
	}
	if r.roster, err = roster.Open(ctx, r.js, r.domain, r.stateReplicas, r.self.String(), r.log); err != nil {
		return err
	}
	r.relay.wakes.roster.Store(r.roster)
	if err := r.binder.bindConfigured(ctx, o.Consumers); err != nil {
		return err
	}
	for stream := range r.binder.binds.streams {
		if err := r.publisher.subjects.load(ctx, stream); err != nil {
			return err
		}
	}
	return r.deadLetters.start(ctx, o.Consumers)
}

// subscribe makes each part's subscriptions (forwarded settles, questions
// about leases, what the server says of consumers) and makes sure the
// server has them before anyone is told the replica's id.
func (r *Replica) subscribe() error {
	for _, sub := range []func() error{r.forwarder.subscribe, r.lister.subscribe, r.relay.subscribe} {
		if err := sub(); err != nil {
			return err
		}
	}
	if err := r.nc.FlushTimeout(r.timeout); err != nil {
		return fmt.Errorf("flush subscriptions: %w", err)
	}
	return nil
}

func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// ID is this replica's id, the issuer named in its tokens.
func (r *Replica) ID() token.IssuerID { return r.self }

// MaxBatch and MaxExpires are the request bounds the replica was given.
func (r *Replica) MaxBatch() int { return r.maxBatch }

// MaxExpires caps a Fetch's expires.
func (r *Replica) MaxExpires() time.Duration { return r.maxExp }

// MaxNakDelay bounds a Nak's delay.
func (r *Replica) MaxNakDelay() time.Duration { return r.maxNak }

// MaxLease bounds how long one lease is kept alive.
func (r *Replica) MaxLease() time.Duration { return r.maxLease }

// Ready reports whether the replica can serve: NATS connected.
func (r *Replica) Ready() error {
	if !r.nc.IsConnected() {
		return fmt.Errorf("%w: NATS connection is %v", errs.ErrUnavailable, r.nc.Status())
	}
	return nil
}

// Close refuses callers (errStopping), stops forwarding and background
// work and waits for it, the records of Terms still tried again included,
// within 3/4 of a request timeout; then, within a whole one, the consumers
// nak back what canceled Fetches and ended Consumes left while the replica
// is still in the roster and hears resets (a reset made meanwhile through
// another replica waits for its word and voids what it would nak); then it
// leaves the roster (1/4) and the relay: two request timeouts in all.
func (r *Replica) Close() {
	if !r.run.Close() {
		return
	}
	r.closing.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout*3/4)
	defer cancel()
	r.StopPush(ctx)
	r.forwarder.stop(ctx)
	r.lister.stop()
	r.deadLetters.stop(ctx)
	r.deadLetters.waitStored(ctx)
	r.run.cancel()
	r.run.Wait()
	naks, cancelNaks := context.WithTimeout(context.Background(), r.timeout) // a Consume's last pull may take most of it
	defer cancelNaks()
	var closing sync.WaitGroup // at once: no consumer's wait takes another's time
	for _, b := range r.binder.all() {
		closing.Go(func() { b.c.Close(naks) })
	}
	closing.Wait()
	if r.roster != nil { // the relay still answers words: a peer's reset naming it waits for none
		leave, cancelLeave := context.WithTimeout(context.Background(), r.timeout/4)
		r.roster.Close(leave)
		cancelLeave()
	}
	r.relay.stop()
	r.forwarder.close()
}

// Fetch leases up to req.Batch messages of a consumer.
func (r *Replica) Fetch(ctx context.Context, stream, name string, req consumer.FetchRequest) (consumer.FetchResult, error) {
	if r.closing.Load() {
		return consumer.FetchResult{}, errStopping
	}
	c, done, err := r.consumer(ctx, stream, name)
	if err != nil {
		return consumer.FetchResult{}, err
	}
	defer done()
	if r.spans == nil { // tracing off
		return r.fetchUntilEnding(ctx, c, req)
	}
	span := r.spans.Receive(ctx, stream, name)
	res, err := r.fetchUntilEnding(ctx, c, req)
	span.Link(len(res.Messages), origins(res.Messages))
	span.End(err)
	return res, err
}

// Consume streams leases of a consumer to send until ctx ends or the
// gateway begins to stop (EndStreams; see consumer.Consume).
func (r *Replica) Consume(ctx context.Context, stream, name string, req consumer.ConsumeRequest, send func([]*consumer.Delivery) error) error {
	if r.closing.Load() {
		return errStopping
	}
	req.Ending = r.ending.Done()
	c, done, err := r.consumer(ctx, stream, name)
	if err != nil {
		return err
	}
	defer done()
	return c.Consume(ctx, req, func(ds []*consumer.Delivery) error {
		if len(ds) == 0 || r.spans == nil { // a heartbeat, or tracing off
			return send(ds)
		}
		span := r.spans.Receive(ctx, stream, name)
		span.Link(len(ds), origins(ds))
		err := send(ds)
		span.End(err)
		return err
	})
}
