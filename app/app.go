// Package app runs a whole jetgate process: NATS (embedded or remote), the
// gRPC services and the REST gateway.
package app

import (
	"context"
	"crypto/tls"
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
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/test/bufconn"

	"github.com/jetgate/jetgate/gateway"
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
	if err := p.serveGRPC(ctx); err != nil {
		return err
	}
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
	public, inner    *grpc.Server  // gRPC for callers; for the REST side, in memory
	grpcDone         chan struct{} // closed once public stops serving, grpcErr why
	grpcErr          error
	late             *lateServices     // public's services, backed once the replica is built
	calls            *calls            // what every call runs through
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

// buildServers makes the REST side, with the one interceptor chain of gRPC
// and REST alike (calls): REST calls come through it too, their principal
// asserted by the gateway. It backs the public gRPC server's services,
// served since serveGRPC, with the replica: from now on they take calls.
func (p *process) buildServers(ctx context.Context, reg *prometheus.Registry) error {
	c := p.calls
	// The REST side's road (the in-memory server of its streams, and Local)
	// takes the principal the gateway asserts; the gRPC listener refuses it.
	rest := c.guard.ForREST()
	restChain := []grpc.UnaryServerInterceptor{c.obs, rest.Unary()}
	// The REST side reaches the services in process, through a gRPC server
	// of its own on an in-memory listener: the same interceptor chain, no
	// TLS to terminate, no port for anyone else. Every REST caller's stream
	// shares its one connection, so it has no cap on the streams a
	// connection runs: REST callers are bounded by HTTP, connection by
	// connection.
	p.innerLis = bufconn.Listen(1 << 20)
	p.onClose(func() { _ = p.innerLis.Close() })
	p.inner = grpc.NewServer(append(p.baseOptions(), append(p.innerTracing(), grpc.ChainUnaryInterceptor(restChain...), grpc.ChainStreamInterceptor(c.obsStream, rest.Stream()))...)...)
	server.RegisterREST(p.inner, p.replica, p.log, p.stall)
	server.Register(p.late, p.replica, p.log, p.stall)
	p.late.ready.Store(true)
	p.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	var metrics http.Handler
	if config.On(p.cfg.Listen.Metrics) {
		metrics = promhttp.HandlerFor(prometheus.Gatherers{reg, c.metrics}, promhttp.HandlerOpts{})
	}
	return p.buildREST(ctx, gateway.Options{
		Metrics: metrics, Refused: c.refused,
		Local: func(conn grpc.ClientConnInterface) grpc.ClientConnInterface {
			return server.NewLocal(p.replica, p.log, restChain, conn)
		},
		Auth: c.authn, Denied: c.guard.DeniedHTTP, LocalOnly: c.authn == nil && !p.cfg.Auth.AllowUnauthenticated && loopbackListener(p.httpLis),
		Console: p.cfg.Console.Enabled, WriteStall: p.stall,
		ClientCertRequired: p.cfg.Listen.TLS.ClientCA != "", KeptForProbes: onKeptPlace,
	})
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
	g.Go(func() error {
		<-p.grpcDone // serving since serveGRPC
		return p.grpcErr
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
