package app

import (
	"context"
	"net"
	"net/http"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// probePlaces is how many connections each listener takes beyond
// limits.max_connections for the probes: with every place of callers held
// (a pool of idle keep-alive connections is enough), /healthz failed and
// Kubernetes restarted the pod. A connection on one of them serves the
// probes alone (HTTP: GET /healthz and /readyz, and it is closed after the
// answer; gRPC: Health's Check) and is closed after keptLife at the most;
// anything else on it is refused TOO_MANY_CONNECTIONS, so the limit stays
// one for callers.
const probePlaces = 8

// keptLife is how long a connection on a place kept for the probes is held
// at the most: a probe's is done in a second or two, and one that says
// nothing does not keep the place from the next.
const keptLife = 5 * time.Second

// healthCheck is the one gRPC method a kept place serves: a probe's.
const healthCheck = "/grpc.health.v1.Health/Check"

// keptForProbes reports whether a connection of remote address a (its TLS
// passes its connection's on) holds a place kept for the probes.
func keptForProbes(a net.Addr) bool {
	_, ok := a.(keptAddr)
	return ok
}

// keptCall reports whether ctx is of a gRPC call on a place kept for the
// probes.
func keptCall(ctx context.Context) bool {
	p, ok := peer.FromContext(ctx)
	return ok && keptForProbes(p.Addr)
}

// keptKey marks the context of an HTTP connection on a place kept for the
// probes.
type keptKey struct{}

// markKept is the HTTP server's ConnContext: it marks a connection kept
// for the probes, for onKeptPlace.
func markKept(ctx context.Context, c net.Conn) context.Context {
	if keptForProbes(c.RemoteAddr()) {
		return context.WithValue(ctx, keptKey{}, true)
	}
	return ctx
}

// onKeptPlace is the gateway's KeptForProbes.
func onKeptPlace(r *http.Request) bool { return r.Context().Value(keptKey{}) != nil }

// errKeptForProbes is a gRPC call but Health's Check on a place kept for
// the probes, as the gateway answers REST's (503).
func errKeptForProbes() error {
	st := status.New(codes.Unavailable, "this listener holds limits.max_connections connections already: this connection, one of the few kept for the probes, serves only grpc.health.v1.Health/Check; try again later")
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: "TOO_MANY_CONNECTIONS", Domain: "jetgate"}); err == nil {
		st = d
	}
	return st.Err()
}

// keptUnary and keptStream refuse every call but Health's Check on a
// connection kept for the probes, before the guard reads credentials.
func keptUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if info.FullMethod != healthCheck && keptCall(ctx) {
		return nil, errKeptForProbes()
	}
	return h(ctx, req)
}

func keptStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if keptCall(ss.Context()) {
		return errKeptForProbes()
	}
	return h(srv, ss)
}
