// Package app runs a whole jetgate process: NATS (embedded or remote), the
// gRPC services and the REST gateway.
package app

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/test/bufconn"

	"github.com/jetgate/jetgate/gateway"
	"github.com/jetgate/jetgate/internal/auth"
	"github.com/jetgate/jetgate/internal/config"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/tracing"
	"github.com/jetgate/jetgate/server"
)

// Run serves until ctx ends, then shuts everything down in order and
// returns once all of it has stopped.
func Run(ctx context.Context, o Options) error {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	log.Info("jetgate starting", "version", Version(), "go", runtime.Version())
	cfg, err := config.Resolve(o.ConfigFile, o.Flags)
	if err != nil {
		return err
	}
	if err := cfg.PastPause(time.Now()); err != nil {
		log.Warn("pause_until has passed", "error", err)
	}
	for _, w := range cfg.Warnings() {
		log.Warn("configuration: " + w)
	}
	p := &process{cfg: cfg, log: log, health: health.NewServer(), streams: o.StreamsPerConnection, stall: o.ConsumeWriteStall}
	defer p.close()
	if err := p.startTracing(ctx, o.TracerProvider); err != nil {
		return err
	}
	if err := p.listen(); err != nil {
		return err
	}
	if err := p.loadTLS(); err != nil {
		return err
	}
	p.serveHTTP()
	if err := p.connect(ctx); err != nil {
		return stoppedOr(ctx, err)
	}
	if err := p.build(ctx); err != nil {
		return stoppedOr(ctx, err)
	}
	return p.serve(ctx, o)
}

// process is what Run builds, step by step, and takes down in reverse.
type process struct {
	cfg    *config.Config
	log    *slog.Logger
	health *health.Server
	addrs  Addrs
	// streams caps the RPCs one gRPC caller's connection runs at once;
	// stall, how long one response of a Consume stream waits to be read.
	streams uint32
	stall   time.Duration

	grpcLis, httpLis net.Listener
	refused          *prometheus.CounterVec // connections the listeners' caps refused
	idle             *idleConns             // the gRPC listener's connections, closed when idle
	nc               *nats.Conn
	watch            *natsWatch
	stalls           *stallWatch
	replica          *replica.Replica
	public, inner    *grpc.Server      // gRPC for callers; for the REST side, in memory
	innerLis         *bufconn.Listener // the inner server's
	http             *http.Server
	handler          swapHandler   // http's: the probes alone, then the gateway
	httpDone         chan struct{} // closed once http stops serving, httpErr why
	httpErr          error
	tls              *tls.Config // the listeners', nil without TLS
	trc              *tracing.Tracing
	closers          []func() // run in reverse by close
}

func (p *process) onClose(f func()) { p.closers = append(p.closers, f) }

func (p *process) close() {
	for _, f := range slices.Backward(p.closers) {
		f()
	}
}

func (p *process) listen() error {
	var err error
	if p.grpcLis, err = net.Listen("tcp", p.cfg.Listen.GRPC); err != nil {
		return p.cfg.Errorf("listen.grpc", "%s: %v", p.cfg.Listen.GRPC, err)
	}
	p.onClose(func() { _ = p.grpcLis.Close() })
	if p.httpLis, err = net.Listen("tcp", p.cfg.Listen.HTTP); err != nil {
		return p.cfg.Errorf("listen.http", "%s: %v", p.cfg.Listen.HTTP, err)
	}
	p.onClose(func() { _ = p.httpLis.Close() })
	p.addrs.GRPC, p.addrs.HTTP = p.grpcLis.Addr().String(), p.httpLis.Addr().String()
	p.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jetgate_connections_refused_total",
		Help: "Connections closed as they were accepted, the listener holding limits.max_connections already, and its few places kept for the probes.",
	}, []string{"listener"})
	most := p.cfg.Limits.MaxConnections
	p.idle = newIdleConns(time.Duration(p.cfg.Limits.IdleTimeout))
	p.grpcLis = p.idle.listen(capListener(p.grpcLis, most, probePlaces, p.refused.WithLabelValues("grpc").Inc))
	p.httpLis = capListener(p.httpLis, most, probePlaces, p.refused.WithLabelValues("http").Inc)
	return nil
}

// serveHTTP serves the REST listener from now on, the probes first
// (gateway.Starting) until buildREST hands it the gateway: /healthz is
// answered while start-up waits for NATS.
func (p *process) serveHTTP() {
	p.handler.set(gateway.Starting(waitReason))
	p.http = &http.Server{
		Handler:           &p.handler,
		ReadHeaderTimeout: min(time.Duration(p.cfg.Limits.IdleTimeout), 5*time.Second),
		ReadTimeout:       30 * time.Second,
		// A Fetch may wait up to --max-expires before it writes.
		WriteTimeout:   time.Duration(p.cfg.Limits.MaxExpires) + 30*time.Second,
		IdleTimeout:    time.Duration(p.cfg.Limits.IdleTimeout),
		MaxHeaderBytes: maxHeaderBytes - httpHeaderSlack,
		ErrorLog:       slog.NewLogLogger(p.log.Handler(), slog.LevelWarn),
		TLSConfig:      p.httpTLS(),
		ConnContext:    markKept,
	}
	p.httpDone = make(chan struct{})
	go func() {
		defer close(p.httpDone)
		serve := func() error { return p.http.Serve(p.httpLis) }
		if p.tls != nil {
			serve = func() error { return p.http.ServeTLS(p.httpLis, "", "") } // certificates from TLSConfig
		}
		if err := serve(); !errors.Is(err, http.ErrServerClosed) {
			p.httpErr = err
		}
	}()
	p.onClose(func() {
		_ = p.http.Close()
		<-p.httpDone
	})
}

// buildServers makes the gRPC servers and the REST side, with one
// interceptor chain for gRPC and REST alike: REST calls come through it too,
// their principal asserted by the gateway.
func (p *process) buildServers(ctx context.Context, reg *prometheus.Registry) error {
	authn, err := p.authenticator()
	if err != nil {
		return err
	}
	// The REST side's road (the in-memory server of its streams, and Local)
	// takes the principal the gateway asserts; the gRPC listener refuses it.
	guard := server.NewGuard(authn, p.log, reg)
	rest := guard.ForREST()
	obs, obsStream, refused := observe(p.log, reg)
	chain := []grpc.UnaryServerInterceptor{obs, guard.Unary()}
	restChain := []grpc.UnaryServerInterceptor{obs, rest.Unary()}
	opts := []grpc.ServerOption{
		grpc.WaitForHandlers(true),
		// A gRPC caller is bounded as a REST one is: no request larger than
		// a REST body makes.
		grpc.MaxRecvMsgSize(gateway.RequestLimit(p.cfg.Limits.MaxBodyBytes)),
	}
	// The REST side reaches the services in process, through a gRPC server
	// of its own on an in-memory listener: the same interceptor chain, no
	// TLS to terminate, no port for anyone else. Every REST caller's stream
	// shares its one connection, so it has no cap on the streams a
	// connection runs: REST callers are bounded by HTTP, connection by
	// connection.
	p.innerLis = bufconn.Listen(1 << 20)
	p.onClose(func() { _ = p.innerLis.Close() })
	p.inner = grpc.NewServer(append(slices.Clone(opts), append(p.innerTracing(), grpc.ChainUnaryInterceptor(restChain...), grpc.ChainStreamInterceptor(obsStream, rest.Stream()))...)...)
	opts = append(opts, p.grpcTracing()...)
	server.RegisterREST(p.inner, p.replica, p.log, p.stall)
	// A gRPC caller's connection runs at most 1024 RPCs at once, and one
	// that stops reading (its answers queued unsent) is closed once it
	// leaves a ping unanswered: what it held is freed within a minute.
	// A connection with no RPC for limits.idle_timeout is closed, and one
	// that has not finished its handshake (TLS, HTTP/2's preface) within it,
	// 10s at most, too, and so is a call whose request does not come within
	// it (firstMessage); one whose caller pings more often than every 10s is
	// told to go away; a request's headers are bounded as REST's are.
	waitFirst := firstMessage{wait: min(time.Duration(p.cfg.Limits.IdleTimeout), maxHandshake)}
	opts = append(opts, grpc.MaxConcurrentStreams(cmp.Or(p.streams, 1024)),
		grpc.ConnectionTimeout(min(time.Duration(p.cfg.Limits.IdleTimeout), maxHandshake)),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			Time: 30 * time.Second, Timeout: 20 * time.Second, MaxConnectionIdle: time.Duration(p.cfg.Limits.IdleTimeout),
		}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.MaxHeaderListSize(maxHeaderBytes),
		grpc.InTapHandle(waitFirst.tap),
		grpc.ChainUnaryInterceptor(append(append([]grpc.UnaryServerInterceptor{waitFirst.unary, keptUnary}, chain...), p.idle.unary)...),
		grpc.ChainStreamInterceptor(waitFirst.stream, keptStream, obsStream, guard.Stream(), p.idle.stream))
	if p.tls != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(p.tls)))
	}
	p.public = grpc.NewServer(opts...)
	server.Register(p.public, p.replica, p.log, p.stall)
	p.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(p.public, boundHealth(p.health))
	if config.On(p.cfg.Listen.Reflection) {
		reflection.Register(p.public)
	}
	var metrics http.Handler
	if config.On(p.cfg.Listen.Metrics) {
		metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	}
	return p.buildREST(ctx, gateway.Options{
		Metrics: metrics, Refused: refused,
		Local: func(conn grpc.ClientConnInterface) grpc.ClientConnInterface {
			return server.NewLocal(p.replica, p.log, restChain, conn)
		},
		Auth: authn, Denied: guard.DeniedHTTP, LocalOnly: authn == nil && !p.cfg.Auth.AllowUnauthenticated && loopbackListener(p.httpLis),
		Console: p.cfg.Console.Enabled, WriteStall: p.stall,
		ClientCertRequired: p.cfg.Listen.TLS.ClientCA != "", KeptForProbes: onKeptPlace,
	})
}

// authenticator is the configured authentication, nil when it is off.
func (p *process) authenticator() (*auth.Authenticator, error) {
	if p.cfg.Auth.Enabled() {
		authn, err := auth.New(p.cfg.AuthConfig())
		if err != nil {
			return nil, p.cfg.Errorf("auth", "%v", err)
		}
		return authn, nil
	}
	if p.cfg.Auth.AllowUnauthenticated {
		p.log.Warn("serving without authentication: anyone who can reach the listeners may fetch, settle and publish",
			"grpc", p.cfg.Listen.GRPC, "http", p.cfg.Listen.HTTP)
	}
	return nil, nil
}

// buildREST makes the REST gateway, o naming its services, and the HTTP
// server that serves it.
func (p *process) buildREST(ctx context.Context, o gateway.Options) error {
	o.GRPCAddr = "passthrough:///jetgate-in-process"
	o.DialOptions = append([]grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
		return p.innerLis.DialContext(ctx)
	})}, p.dialTracing()...)
	o.MaxBodyBytes, o.CORSOrigins = p.cfg.Limits.MaxBodyBytes, p.cfg.Listen.CORSOrigins
	o.Ready, o.Live, o.Logger = p.replica.Ready, p.watch.live(p.nc), p.log
	rest, err := gateway.New(ctx, o)
	if err != nil {
		return err
	}
	p.onClose(func() { _ = rest.Close() })
	p.handler.set(p.httpTracing(rest))
	return nil
}

// serve runs the servers until ctx ends or the NATS connection is closed for
// good, then stops them within the grace.
func (p *process) serve(ctx context.Context, o Options) error {
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		select {
		case err := <-p.watch.lost:
			return err
		case <-gctx.Done():
			return nil
		}
	})
	g.Go(func() error { return p.public.Serve(p.grpcLis) })
	g.Go(func() error {
		p.idle.run(gctx)
		return nil
	})
	g.Go(func() error { return p.inner.Serve(p.innerLis) })
	g.Go(func() error {
		<-p.httpDone // serving since serveHTTP
		return p.httpErr
	})
	g.Go(func() error {
		<-gctx.Done()
		p.shutdown(o.ShutdownGrace)
		return nil
	})
	p.log.Info("jetgate serving", "grpc", p.addrs.GRPC, "http", p.addrs.HTTP, "consumers", consumerNames(p.cfg),
		"nats", firstNonEmpty(redactedURL(p.cfg.NATS.URL), firstNonEmpty(p.addrs.NATS, "embedded, in-process")), "config", p.cfg.File())
	if o.Started != nil {
		o.Started(p.addrs)
	}
	err := g.Wait()
	p.log.Info("jetgate stopped")
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// shutdown ends callers' Consume streams (UNAVAILABLE: they reconnect), stops
// HTTP and gRPC at once, gracefully within grace (neither takes a new call
// while the other's calls finish), and cuts what is left when it runs out;
// meanwhile the pushers finish what is in flight.
func (p *process) shutdown(grace time.Duration) {
	p.health.Shutdown()
	p.replica.EndStreams() // they would hold the stop for all its grace
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	pushed := make(chan struct{})
	go func() {
		p.replica.StopPush(ctx)
		close(pushed)
	}()
	defer func() { <-pushed }()
	public := make(chan struct{})
	go func() {
		p.public.GracefulStop()
		close(public)
	}()
	if err := p.http.Shutdown(ctx); err != nil {
		_ = p.http.Close() // the grace ran out: cut the long polls
	}
	stopped := make(chan struct{})
	go func() {
		p.inner.GracefulStop() // REST calls ended with the HTTP server
		<-public
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-ctx.Done():
		p.public.Stop()
		p.inner.Stop()
		<-stopped
	}
}
