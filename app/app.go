// Package app runs a whole jetgate process: NATS (embedded or remote), the
// gRPC services and the REST gateway.
package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/jetgate/jetgate/gateway"
	"github.com/jetgate/jetgate/internal/auth"
	"github.com/jetgate/jetgate/internal/config"
	"github.com/jetgate/jetgate/internal/core"
	"github.com/jetgate/jetgate/internal/tlsfiles"
	"github.com/jetgate/jetgate/server"
)

// Run serves until ctx ends, then shuts everything down in order and
// returns once all of it has stopped.
func Run(ctx context.Context, o Options) error {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	cfg, err := config.Resolve(o.ConfigFile, o.Flags)
	if err != nil {
		return err
	}
	keys, err := loadKeys(cfg, log)
	if err != nil {
		return err
	}
	grpcLis, err := net.Listen("tcp", cfg.Listen.GRPC)
	if err != nil {
		return cfg.Errorf("listen.grpc", "%s: %v", cfg.Listen.GRPC, err)
	}
	defer grpcLis.Close()
	httpLis, err := net.Listen("tcp", cfg.Listen.HTTP)
	if err != nil {
		return cfg.Errorf("listen.http", "%s: %v", cfg.Listen.HTTP, err)
	}
	defer httpLis.Close()

	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	watch := newNATSWatch(log, hs)
	natsOpts := append([]nats.Option{
		nats.Name("jetgate"),
		nats.MaxReconnects(-1),
		// Nothing waits in a reconnect buffer: a settle sent late would land
		// on the next delivery of its message, a late publish be a duplicate.
		nats.ReconnectBufSize(-1),
	}, watch.options()...)

	var addrs Addrs
	var nc *nats.Conn
	if cfg.NATS.URL == "" {
		ns, creds, err := startEmbedded(cfg, log)
		if err != nil {
			return err
		}
		defer func() {
			ns.Shutdown()
			ns.WaitForShutdown()
		}()
		if cfg.Embedded.Listen != "" {
			addrs.NATS = ns.ClientURL()
		}
		nc, err = nats.Connect(ns.ClientURL(), append(append(natsOpts, nats.InProcessServer(ns)), creds...)...)
		if err != nil {
			return fmt.Errorf("connect to embedded NATS: %w", err)
		}
	} else {
		secured, err := natsSecurity(cfg)
		if err != nil {
			return err
		}
		nc, err = nats.Connect(cfg.NATS.URL, append(natsOpts, secured...)...)
		if err != nil {
			return cfg.Errorf("nats.url", "%s: %v", redactedURL(cfg.NATS.URL), err)
		}
	}
	defer watch.close(nc)

	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if err := ensureStreams(ctx, js, cfg, log); err != nil {
		return err
	}
	if err := checkOnServer(ctx, js, cfg); err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	gw, err := core.New(ctx, core.Options{
		Conn:          nc,
		Consumers:     cfg.ConsumerConfigs(),
		Keys:          keys,
		MaxBatch:      cfg.Limits.MaxBatch,
		MaxExpires:    time.Duration(cfg.Limits.MaxExpires),
		MaxFetchBytes: cfg.Limits.MaxFetchBytes,
		Metrics:       reg,
		Logger:        log,
	})
	if err != nil {
		return err
	}
	defer gw.Close()

	// One chain for gRPC and REST alike: REST calls come through it too,
	// their principal asserted by the gateway.
	var authn *auth.Authenticator
	if cfg.Auth.Enabled() {
		if authn, err = auth.New(cfg.AuthConfig()); err != nil {
			return cfg.Errorf("auth", "%v", err)
		}
	} else if cfg.Auth.AllowUnauthenticated {
		log.Warn("serving without authentication: anyone who can reach the listeners may fetch, settle and publish",
			"grpc", cfg.Listen.GRPC, "http", cfg.Listen.HTTP)
	}
	assert := auth.NewAssertion()
	guard := server.NewGuard(authn, assert, log, reg)
	var tlsConf *tls.Config
	if t := cfg.Listen.TLS; t.Cert != "" {
		if tlsConf, err = tlsfiles.Config(tlsfiles.Files{Cert: t.Cert, Key: t.Key, ClientCA: t.ClientCA}, log); err != nil {
			return cfg.Errorf("listen.tls", "%v", err)
		}
	}
	chain := server.Chain(observe(log, reg), guard.Unary())
	serverOpts := []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(chain),
		grpc.ChainStreamInterceptor(guard.Stream()),
		grpc.WaitForHandlers(true),
		// A gRPC caller is bounded as a REST one is: no request larger than
		// a REST body makes.
		grpc.MaxRecvMsgSize(gateway.RequestLimit(cfg.Limits.MaxBodyBytes)),
	}
	// The REST side reaches the services in process, through a gRPC server
	// of its own on an in-memory listener: the same interceptor chain, no
	// TLS to terminate, no port for anyone else. Every REST caller's stream
	// shares its one connection, so it has no cap on the streams a
	// connection runs: REST callers are bounded by HTTP, connection by
	// connection.
	inner := bufconn.Listen(1 << 20)
	defer inner.Close()
	ins := grpc.NewServer(serverOpts...)
	server.Register(ins, gw, log)
	// A gRPC caller's connection runs at most 1024 RPCs at once.
	serverOpts = append(serverOpts, grpc.MaxConcurrentStreams(1024))
	if tlsConf != nil {
		serverOpts = append(serverOpts, grpc.Creds(credentials.NewTLS(tlsConf)))
	}
	gs := grpc.NewServer(serverOpts...)
	server.Register(gs, gw, log)
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	if config.On(cfg.Listen.Reflection) {
		reflection.Register(gs)
	}

	var metrics http.Handler
	if config.On(cfg.Listen.Metrics) {
		metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	}
	localConsumer, localStream := server.InProcess(gw, log, chain)
	rest, err := gateway.New(ctx, gateway.Options{
		Consumer: localConsumer,
		Stream:   localStream,
		GRPCAddr: "passthrough:///jetgate-in-process",
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return inner.DialContext(ctx)
		})},
		MaxBodyBytes: cfg.Limits.MaxBodyBytes,
		Ready:        gw.Ready,
		Live:         watch.live(nc),
		Metrics:      metrics,
		Logger:       log,
		Auth:         authn,
		Assert:       assert,
		Denied:       guard.DeniedHTTP,
		CORSOrigins:  cfg.Listen.CORSOrigins,
	})
	if err != nil {
		return err
	}
	defer rest.Close()
	hsrv := &http.Server{
		Handler:           rest,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		// A Fetch may wait up to --max-expires before it writes.
		WriteTimeout:   time.Duration(cfg.Limits.MaxExpires) + 30*time.Second,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		TLSConfig:      tlsConf,
	}

	addrs.GRPC, addrs.HTTP = grpcLis.Addr().String(), httpLis.Addr().String()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		select {
		case err := <-watch.lost:
			return err
		case <-gctx.Done():
			return nil
		}
	})
	g.Go(func() error { return gs.Serve(grpcLis) })
	g.Go(func() error { return ins.Serve(inner) })
	g.Go(func() error {
		serve := func() error { return hsrv.Serve(httpLis) }
		if tlsConf != nil {
			serve = func() error { return hsrv.ServeTLS(httpLis, "", "") } // certificates from TLSConfig
		}
		if err := serve(); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		hs.Shutdown()
		sctx, cancel := context.WithTimeout(context.Background(), o.ShutdownGrace)
		defer cancel()
		if err := hsrv.Shutdown(sctx); err != nil {
			_ = hsrv.Close() // the grace ran out: cut the long polls
		}
		stopped := make(chan struct{})
		go func() {
			gs.GracefulStop()
			ins.GracefulStop() // REST calls ended with the HTTP server
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-sctx.Done():
			gs.Stop()
			ins.Stop()
			<-stopped
		}
		return nil
	})
	log.Info("jetgate serving", "grpc", addrs.GRPC, "http", addrs.HTTP, "consumers", consumerNames(cfg),
		"nats", firstNonEmpty(redactedURL(cfg.NATS.URL), firstNonEmpty(addrs.NATS, "embedded, in-process")), "config", cfg.File())
	if o.Started != nil {
		o.Started(addrs)
	}
	err = g.Wait()
	log.Info("jetgate stopped")
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// observe times every RPC (REST calls included: the gateway dials gRPC) and
// logs failures at debug level; the services log what callers do not see.
func observe(log *slog.Logger, reg prometheus.Registerer) grpc.UnaryServerInterceptor {
	dur := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "jetgate_rpc_duration_seconds",
		Help:    "RPC latency by method and gRPC code.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"method", "code"})
	reg.MustRegister(dur)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := h(ctx, req)
		code := status.Code(err)
		dur.WithLabelValues(path.Base(info.FullMethod), code.String()).Observe(time.Since(start).Seconds())
		if err != nil {
			log.Debug("rpc failed", "method", info.FullMethod, "code", code, "err", err)
		}
		return resp, err
	}
}
