package app

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/jetgate/jetgate/gateway"
	"github.com/jetgate/jetgate/internal/auth"
	"github.com/jetgate/jetgate/internal/config"
	"github.com/jetgate/jetgate/server"
)

// healthService prefixes the Health service's methods, which need neither
// credentials nor NATS.
const healthService = "/grpc.health.v1.Health/"

// calls is what every call runs through, gRPC's and REST's alike (REST's
// with the guard's ForREST): the guard and the metrics. It is made with the
// public gRPC server, before start-up waits; its metrics are in a registry
// of their own, which /metrics gathers with the replica's.
type calls struct {
	authn     *auth.Authenticator // nil: authentication is off
	guard     *server.Guard
	obs       grpc.UnaryServerInterceptor
	obsStream grpc.StreamServerInterceptor
	refused   func(string, codes.Code, time.Duration) // gateway.Options.Refused
	metrics   *prometheus.Registry
}

func newCalls(cfg *config.Config, log *slog.Logger) (*calls, error) {
	authn, err := authenticator(cfg, log)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	c := &calls{authn: authn, guard: server.NewGuard(authn, log, reg), metrics: reg}
	c.obs, c.obsStream, c.refused = observe(log, reg)
	return c, nil
}

// authenticator is the configured authentication, nil when it is off.
func authenticator(cfg *config.Config, log *slog.Logger) (*auth.Authenticator, error) {
	if cfg.Auth.Enabled() {
		authn, err := auth.New(cfg.AuthConfig())
		if err != nil {
			return nil, cfg.Errorf("auth", "%v", err)
		}
		return authn, nil
	}
	if cfg.Auth.AllowUnauthenticated {
		log.Warn("serving without authentication: anyone who can reach the listeners may fetch, settle and publish",
			"grpc", cfg.Listen.GRPC, "http", cfg.Listen.HTTP)
	}
	return nil, nil
}

// lateServices are the public server's services that need the replica:
// registered as the server is made (register), backed once the replica is
// built (RegisterService, as a grpc.ServiceRegistrar for server.Register),
// and called once ready is set; until then every call but Health's is
// refused, before the guard, as REST refuses every route but the probes.
type lateServices struct {
	ready atomic.Bool
	impls map[string]*atomic.Value // by service name; written by register alone
}

// register adds the services of descs to s, each call handled by the
// implementation RegisterService gives later.
func (l *lateServices) register(s *grpc.Server, descs ...*grpc.ServiceDesc) {
	for _, sd := range descs {
		impl := new(atomic.Value)
		l.impls[sd.ServiceName] = impl
		d := *sd
		d.Methods, d.Streams = slices.Clone(sd.Methods), slices.Clone(sd.Streams)
		for i, m := range d.Methods {
			d.Methods[i].Handler = func(_ any, ctx context.Context, dec func(any) error, in grpc.UnaryServerInterceptor) (any, error) {
				srv := impl.Load()
				if srv == nil { // not past unary: cannot be
					return nil, gateway.StartingError(waitReason)
				}
				return m.Handler(srv, ctx, dec, in)
			}
		}
		for i, st := range d.Streams {
			d.Streams[i].Handler = func(_ any, ss grpc.ServerStream) error {
				srv := impl.Load()
				if srv == nil {
					return gateway.StartingError(waitReason)
				}
				return st.Handler(srv, ss)
			}
		}
		s.RegisterService(&d, nil) // nil: no implementation to check yet
	}
}

// RegisterService backs the service of sd, which register added, with impl.
func (l *lateServices) RegisterService(sd *grpc.ServiceDesc, impl any) {
	v, ok := l.impls[sd.ServiceName]
	if !ok {
		panic(fmt.Sprintf("jetgate: service %s was not registered before the gRPC server served", sd.ServiceName))
	}
	v.Store(impl)
}

func (l *lateServices) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if !l.ready.Load() && !strings.HasPrefix(info.FullMethod, healthService) {
		return nil, gateway.StartingError(waitReason)
	}
	return h(ctx, req)
}

func (l *lateServices) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if !l.ready.Load() && !strings.HasPrefix(info.FullMethod, healthService) {
		return gateway.StartingError(waitReason)
	}
	return h(srv, ss)
}
