package app

import (
	"context"
	"log/slog"
	"path"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// observe times every RPC, unary and streaming (REST calls included: they
// run the same chains), and logs failures at debug level; the services log
// what callers do not see. A stream (Consume) is counted when it ends, with
// the code it ended with and how long it lasted: a Consume that fails on
// NATS is a call failing with Unavailable, as a Fetch is. refused counts a
// REST call the gateway refused before the chains (gateway.Options.Refused).
func observe(log *slog.Logger, reg prometheus.Registerer) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor, func(string, codes.Code, time.Duration)) {
	dur := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "jetgate_rpc_duration_seconds",
		Help:    "RPC latency by method and gRPC code; a stream's (Consume's) is how long it lasted.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"method", "code"})
	reg.MustRegister(dur)
	done := func(method string, start time.Time, err error) {
		code := status.Code(err)
		dur.WithLabelValues(path.Base(method), code.String()).Observe(time.Since(start).Seconds())
		if err != nil {
			log.Debug("rpc failed", "method", method, "code", code, "err", err)
		}
	}
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := h(ctx, req)
		done(info.FullMethod, start, err)
		return resp, err
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		start := time.Now()
		err := h(srv, ss)
		done(info.FullMethod, start, err)
		return err
	}
	refused := func(method string, code codes.Code, took time.Duration) {
		dur.WithLabelValues(method, code.String()).Observe(took.Seconds())
	}
	return unary, stream, refused
}
