package app

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/gateway"
	"github.com/jetgate/jetgate/internal/config"
	"github.com/jetgate/jetgate/internal/tlsfiles"
)

// listen binds both listeners, capped (limits.go), gRPC's connections
// watched for idleness (idle.go): they are served from then on (serveHTTP,
// serveGRPC), while start-up waits for NATS too.
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

// loadTLS reads the listeners' TLS files (listen.tls), if any: reloaded
// as they change.
func (p *process) loadTLS() error {
	t := p.cfg.Listen.TLS
	if t.Cert == "" {
		return nil
	}
	var err error
	if p.tls, err = tlsfiles.Config(tlsfiles.Files{Cert: t.Cert, Key: t.Key, ClientCA: t.ClientCA}, p.log); err != nil {
		return p.cfg.Errorf("listen.tls", "%v", err)
	}
	return nil
}

// httpTLS is the REST listener's TLS: the listeners', but one that asks for
// a client certificate (listen.tls.client_ca) takes a handshake without one
// here, so that the kubelet's probes, which present none, are answered;
// the gateway requires one of every other request (ClientCertRequired).
func (p *process) httpTLS() *tls.Config {
	if p.tls == nil {
		return nil
	}
	return tlsfiles.CertIfGiven(p.tls)
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

// serveGRPC serves the gRPC listener from now on, as serveHTTP the REST
// one: while start-up waits, Health says NOT_SERVING and every other call
// is refused at once (gateway.StartingError); bound and not served, the
// listener left every call and probe hanging until its own deadline.
// jetgate's services are registered now, since grpc-go takes none once it
// serves, and backed once the replica is built (buildServers): a caller's
// connection and its Health Watch go on across the change.
func (p *process) serveGRPC(ctx context.Context) error {
	var err error
	if p.calls, err = newCalls(p.cfg, p.log); err != nil {
		return err
	}
	p.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	p.late = &lateServices{impls: make(map[string]*atomic.Value)}
	p.public = grpc.NewServer(p.publicOptions()...)
	p.late.register(p.public, &jetgatev1.ConsumerService_ServiceDesc, &jetgatev1.StreamService_ServiceDesc)
	healthpb.RegisterHealthServer(p.public, boundHealth(p.health))
	if config.On(p.cfg.Listen.Reflection) {
		reflection.Register(p.public)
	}
	p.grpcDone = make(chan struct{})
	go func() {
		defer close(p.grpcDone)
		p.grpcErr = p.public.Serve(p.grpcLis)
	}()
	p.onClose(func() {
		p.public.Stop()
		<-p.grpcDone
	})
	// Idle connections are closed while start-up waits too: an anonymous
	// Health Watch holds no slot of max_connections meanwhile either.
	ctx, stop := context.WithCancel(ctx)
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		p.idle.run(ctx)
	}()
	p.onClose(func() {
		stop()
		<-swept
	})
	return nil
}

// baseOptions are both gRPC servers'.
func (p *process) baseOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.WaitForHandlers(true),
		// A gRPC caller is bounded as a REST one is: no request larger than
		// a REST body makes.
		grpc.MaxRecvMsgSize(gateway.RequestLimit(p.cfg.Limits.MaxBodyBytes)),
	}
}

// publicOptions are the gRPC listener's server's: its bounds on callers,
// and every call through the guard and the metrics, as REST's.
func (p *process) publicOptions() []grpc.ServerOption {
	// A gRPC caller's connection runs at most 1024 RPCs at once, and one
	// that stops reading (its answers queued unsent) is closed once it
	// leaves a ping unanswered: what it held is freed within a minute.
	// A connection with no RPC for limits.idle_timeout is closed, and one
	// that has not finished its handshake (TLS, HTTP/2's preface) within it,
	// 10s at most, too, and so is a call whose request does not come within
	// it (firstMessage); one whose caller pings more often than every 10s is
	// told to go away; a request's headers are bounded as REST's are.
	idle := time.Duration(p.cfg.Limits.IdleTimeout)
	waitFirst := firstMessage{wait: min(idle, maxHandshake)}
	c := p.calls
	opts := append(append(p.baseOptions(), p.grpcTracing()...), grpc.MaxConcurrentStreams(cmp.Or(p.streams, 1024)),
		grpc.ConnectionTimeout(min(idle, maxHandshake)),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 20 * time.Second, MaxConnectionIdle: idle}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.MaxHeaderListSize(maxHeaderBytes),
		grpc.InTapHandle(waitFirst.tap),
		grpc.ChainUnaryInterceptor(waitFirst.unary, keptUnary, p.late.unary, c.obs, c.guard.Unary(), p.idle.unary),
		grpc.ChainStreamInterceptor(waitFirst.stream, keptStream, p.late.stream, c.obsStream, c.guard.Stream(), p.idle.stream))
	if p.tls != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(p.tls)))
	}
	return opts
}
