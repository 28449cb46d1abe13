// Package app runs a whole jetgate process: NATS (embedded or remote), the
// gRPC services and the REST gateway.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/jetgate/jetgate/gateway"
	"github.com/jetgate/jetgate/server"
)

// Options is everything a jetgate process is configured with. Field names
// follow the flags (--nats-url is NATSURL).
type Options struct {
	NATSURL        string
	NATSCreds      string // credentials file (JWT and seed) for --nats-url
	NATSTLSCA      string // CA certificate(s) to verify the NATS server by
	NATSTLSCert    string // client certificate, for servers that ask for one
	NATSTLSKey     string
	DataDir        string
	NATSListen     string
	Stream         string
	StreamSubjects []string
	Consumer       string
	FilterSubjects []string
	AckWait        time.Duration
	MaxAckPending  int
	DeliverPolicy  string
	StartSeq       uint64
	StartTime      string
	GRPCAddr       string
	HTTPAddr       string
	TokenKeyFile   string
	MaxBatch       int
	MaxExpires     time.Duration
	MaxBodyBytes   int64
	ShutdownGrace  time.Duration
	Logger         *slog.Logger

	// Started, if set, is called with the bound addresses once serving.
	Started func(Addrs)
}

// Addrs are the addresses a running process listens on.
type Addrs struct {
	GRPC string
	HTTP string
	NATS string // the embedded server's client URL; "" when remote
}

// Defaults, as the flags document them.
func Defaults() Options {
	return Options{
		DataDir:       "jetgate-data",
		NATSListen:    "127.0.0.1:4222",
		Stream:        "ORDERS",
		Consumer:      "billing",
		AckWait:       30 * time.Second,
		MaxAckPending: 1024,
		DeliverPolicy: "all",
		GRPCAddr:      ":9090",
		HTTPAddr:      ":8080",
		MaxBatch:      server.DefaultMaxBatch,
		MaxExpires:    server.DefaultMaxExpires,
		MaxBodyBytes:  gateway.DefaultMaxBodyBytes,
		ShutdownGrace: 10 * time.Second,
	}
}

var deliverPolicies = map[string]jetstream.DeliverPolicy{
	"all":               jetstream.DeliverAllPolicy,
	"last":              jetstream.DeliverLastPolicy,
	"new":               jetstream.DeliverNewPolicy,
	"by_start_sequence": jetstream.DeliverByStartSequencePolicy,
	"by_start_time":     jetstream.DeliverByStartTimePolicy,
	"last_per_subject":  jetstream.DeliverLastPerSubjectPolicy,
}

// consumerConfig checks the consumer options; errors name the flag.
func (o Options) consumerConfig() (server.ConsumerConfig, error) {
	c := server.ConsumerConfig{
		Stream:         o.Stream,
		Name:           o.Consumer,
		FilterSubjects: o.FilterSubjects,
		AckWait:        o.AckWait,
		MaxAckPending:  o.MaxAckPending,
	}
	switch {
	case o.Stream == "" || strings.ContainsAny(o.Stream, ".*> "):
		return c, fmt.Errorf("--stream %q: give a stream name without dots, wildcards or spaces", o.Stream)
	case o.Consumer == "" || strings.ContainsAny(o.Consumer, ".*> "):
		return c, fmt.Errorf("--consumer %q: give a consumer name without dots, wildcards or spaces", o.Consumer)
	case o.AckWait < time.Second:
		return c, fmt.Errorf("--ack-wait %v: must be at least 1s", o.AckWait)
	case o.MaxAckPending < 1:
		return c, fmt.Errorf("--max-ack-pending %d: must be at least 1", o.MaxAckPending)
	case o.MaxBatch < 1:
		return c, fmt.Errorf("--max-batch %d: must be at least 1", o.MaxBatch)
	case o.MaxExpires < time.Second:
		return c, fmt.Errorf("--max-expires %v: must be at least 1s", o.MaxExpires)
	}
	for _, f := range o.FilterSubjects {
		if f == "" || strings.ContainsAny(f, " \t") {
			return c, fmt.Errorf("--filter-subject %q: not a valid subject", f)
		}
	}
	p, ok := deliverPolicies[o.DeliverPolicy]
	if !ok {
		return c, fmt.Errorf("--deliver-policy %q: use one of all, last, new, by_start_sequence, by_start_time, last_per_subject", o.DeliverPolicy)
	}
	c.DeliverPolicy = p
	if p == jetstream.DeliverLastPerSubjectPolicy && len(o.FilterSubjects) == 0 {
		return c, errors.New("--deliver-policy last_per_subject needs --filter-subject (the server requires one)")
	}
	switch {
	case p == jetstream.DeliverByStartSequencePolicy:
		if o.StartSeq == 0 {
			return c, errors.New("--deliver-policy by_start_sequence needs --start-seq (1 or more)")
		}
		c.OptStartSeq = o.StartSeq
	case o.StartSeq != 0:
		return c, errors.New("--start-seq goes with --deliver-policy by_start_sequence")
	}
	switch {
	case p == jetstream.DeliverByStartTimePolicy:
		t, err := time.Parse(time.RFC3339Nano, o.StartTime)
		if err != nil {
			return c, fmt.Errorf("--start-time %q: give an RFC 3339 time, such as 2026-01-02T15:04:05Z (needed by --deliver-policy by_start_time)", o.StartTime)
		}
		c.OptStartTime = &t
	case o.StartTime != "":
		return c, errors.New("--start-time goes with --deliver-policy by_start_time")
	}
	return c, nil
}

// natsSecurity checks the credential and TLS files and turns them into
// connection options; errors name the flag.
func (o Options) natsSecurity() ([]nats.Option, error) {
	var opts []nats.Option
	for _, f := range []struct{ flag, path string }{
		{"--nats-creds", o.NATSCreds}, {"--nats-tls-ca", o.NATSTLSCA},
		{"--nats-tls-cert", o.NATSTLSCert}, {"--nats-tls-key", o.NATSTLSKey},
	} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return nil, fmt.Errorf("%s %s: %w", f.flag, f.path, err)
		}
	}
	if o.NATSCreds != "" {
		opts = append(opts, nats.UserCredentials(o.NATSCreds))
	}
	if o.NATSTLSCA != "" {
		opts = append(opts, nats.RootCAs(o.NATSTLSCA))
	}
	switch {
	case o.NATSTLSCert != "" && o.NATSTLSKey != "":
		opts = append(opts, nats.ClientCert(o.NATSTLSCert, o.NATSTLSKey))
	case o.NATSTLSCert != "" || o.NATSTLSKey != "":
		return nil, errors.New("--nats-tls-cert and --nats-tls-key go together")
	}
	return opts, nil
}

// Run serves until ctx ends, then shuts everything down in order and
// returns once all of it has stopped.
func Run(ctx context.Context, o Options) error {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	cc, err := o.consumerConfig()
	if err != nil {
		return err
	}
	keys, err := loadKeys(o.TokenKeyFile, log)
	if err != nil {
		return fmt.Errorf("--token-key-file: %w", err)
	}
	grpcLis, err := net.Listen("tcp", o.GRPCAddr)
	if err != nil {
		return fmt.Errorf("--grpc-addr %s: %w", o.GRPCAddr, err)
	}
	defer grpcLis.Close()
	httpLis, err := net.Listen("tcp", o.HTTPAddr)
	if err != nil {
		return fmt.Errorf("--http-addr %s: %w", o.HTTPAddr, err)
	}
	defer httpLis.Close()

	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	natsOpts := []nats.Option{
		nats.Name("jetgate"),
		nats.MaxReconnects(-1),
		// Nothing waits in a reconnect buffer: a settle sent late would land
		// on the next delivery of its message, a late publish be a duplicate.
		nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
			log.Warn("NATS disconnected", "err", err)
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
			log.Info("NATS reconnected", "url", c.ConnectedUrlRedacted())
		}),
	}

	var addrs Addrs
	var nc *nats.Conn
	subjects := o.StreamSubjects
	if o.NATSURL == "" {
		ns, err := startEmbedded(o, log)
		if err != nil {
			return err
		}
		defer func() {
			ns.Shutdown()
			ns.WaitForShutdown()
		}()
		addrs.NATS = ns.ClientURL()
		if len(subjects) == 0 {
			subjects = []string{strings.ToLower(o.Stream) + ".>"}
		}
		nc, err = nats.Connect(ns.ClientURL(), append(natsOpts, nats.InProcessServer(ns))...)
		if err != nil {
			return fmt.Errorf("connect to embedded NATS: %w", err)
		}
	} else {
		secured, err := o.natsSecurity()
		if err != nil {
			return err
		}
		nc, err = nats.Connect(o.NATSURL, append(natsOpts, secured...)...)
		if err != nil {
			return fmt.Errorf("--nats-url %s: %w", o.NATSURL, err)
		}
	}
	defer nc.Close()

	if len(subjects) > 0 {
		if err := ensureStream(ctx, nc, o.Stream, subjects, log); err != nil {
			return err
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	gw, err := server.New(ctx, server.Options{
		Conn:       nc,
		Consumers:  []server.ConsumerConfig{cc},
		Keys:       keys,
		MaxBatch:   o.MaxBatch,
		MaxExpires: o.MaxExpires,
		Metrics:    reg,
		Logger:     log,
	})
	if err != nil {
		return err
	}
	defer gw.Close()

	gs := grpc.NewServer(grpc.ChainUnaryInterceptor(observe(log, reg)), grpc.WaitForHandlers(true))
	server.Register(gs, gw)
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	reflection.Register(gs)

	rest, err := gateway.New(ctx, gateway.Options{
		GRPCAddr:     dialAddr(grpcLis.Addr()),
		MaxBodyBytes: o.MaxBodyBytes,
		Ready:        gw.Ready,
		Metrics:      promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
		Logger:       log,
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
		WriteTimeout:   o.MaxExpires + 30*time.Second,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}

	addrs.GRPC, addrs.HTTP = grpcLis.Addr().String(), httpLis.Addr().String()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return gs.Serve(grpcLis) })
	g.Go(func() error {
		if err := hsrv.Serve(httpLis); !errors.Is(err, http.ErrServerClosed) {
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
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-sctx.Done():
			gs.Stop()
			<-stopped
		}
		return nil
	})
	log.Info("jetgate serving", "grpc", addrs.GRPC, "http", addrs.HTTP, "stream", o.Stream, "consumer", o.Consumer,
		"nats", firstNonEmpty(addrs.NATS, o.NATSURL))
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

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// dialAddr turns a listener address into one to dial: an unspecified host
// becomes loopback.
func dialAddr(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

func loadKeys(path string, log *slog.Logger) (*server.Keyring, error) {
	if path != "" {
		return server.LoadKeyring(path)
	}
	log.Warn("no --token-key-file: using a random token key, so tokens live and die with this process and replicas cannot settle each other's leases")
	return server.RandomKeyring(), nil
}

func startEmbedded(o Options, log *slog.Logger) (*natsserver.Server, error) {
	host, portStr, err := net.SplitHostPort(o.NATSListen)
	if err != nil {
		return nil, fmt.Errorf("--nats-listen %q: give host:port: %w", o.NATSListen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("--nats-listen %q: bad port", o.NATSListen)
	}
	if o.DataDir == "" {
		return nil, errors.New("--data-dir: the embedded server needs a directory for its store")
	}
	ns, err := natsserver.NewServer(&natsserver.Options{
		ServerName: "jetgate-embedded",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   o.DataDir,
		NoSigs:     true,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded NATS: %w", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("--nats-listen %s: the embedded NATS server did not start (is the port taken?)", o.NATSListen)
	}
	log.Info("embedded NATS JetStream started", "url", ns.ClientURL(), "store", o.DataDir)
	return ns, nil
}

// ensureStream creates the stream with the given subjects if it is missing.
func ensureStream(ctx context.Context, nc *nats.Conn, name string, subjects []string, log *slog.Logger) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	_, err = js.Stream(ctx, name)
	if err == nil {
		return nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("look up stream %q: %w", name, err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: subjects}); err != nil {
		return fmt.Errorf("--stream-subjects: create stream %q with subjects %v: %w", name, subjects, err)
	}
	log.Info("created stream", "stream", name, "subjects", subjects)
	return nil
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
