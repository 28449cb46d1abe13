package server

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/auth"
	"github.com/jetgate/jetgate/internal/errs"
)

// actions maps each jetgate RPC to the action a grant must allow. Any other
// method but health checks needs an authenticated caller only.
var actions = map[string]auth.Action{
	jetgatev1.ConsumerService_Fetch_FullMethodName:          auth.ActionFetch,
	jetgatev1.ConsumerService_Consume_FullMethodName:        auth.ActionFetch,
	jetgatev1.ConsumerService_Ack_FullMethodName:            auth.ActionSettle,
	jetgatev1.ConsumerService_Nak_FullMethodName:            auth.ActionSettle,
	jetgatev1.ConsumerService_Term_FullMethodName:           auth.ActionSettle,
	jetgatev1.ConsumerService_Extend_FullMethodName:         auth.ActionSettle,
	jetgatev1.ConsumerService_GetConsumer_FullMethodName:    auth.ActionRead,
	jetgatev1.ConsumerService_Redrive_FullMethodName:        auth.ActionRedrive,
	jetgatev1.ConsumerService_Pause_FullMethodName:          auth.ActionManage,
	jetgatev1.ConsumerService_Resume_FullMethodName:         auth.ActionManage,
	jetgatev1.ConsumerService_Unpin_FullMethodName:          auth.ActionManage,
	jetgatev1.ConsumerService_Seek_FullMethodName:           auth.ActionSeek,
	jetgatev1.ConsumerService_CreateConsumer_FullMethodName: auth.ActionAdmin,
	jetgatev1.ConsumerService_UpdateConsumer_FullMethodName: auth.ActionAdmin,
	jetgatev1.ConsumerService_DeleteConsumer_FullMethodName: auth.ActionAdmin,
	jetgatev1.StreamService_Publish_FullMethodName:          auth.ActionPublish,
	jetgatev1.StreamService_PublishBatch_FullMethodName:     auth.ActionPublish,
	// Listing (guard_list.go).
	jetgatev1.StreamService_ListStreams_FullMethodName:       auth.ActionRead,
	jetgatev1.ConsumerService_ListConsumers_FullMethodName:   auth.ActionRead,
	jetgatev1.ConsumerService_ListLeases_FullMethodName:      auth.ActionRead,
	jetgatev1.ConsumerService_ListDeadLetters_FullMethodName: auth.ActionRead,
}

// open are the methods anyone may call: probes.
func open(method string) bool { return strings.HasPrefix(method, "/grpc.health.v1.Health/") }

// Guard authenticates every call and authorizes every jetgate RPC before it
// does any work, the same for gRPC callers and for the REST side. With no
// authenticator it lets everybody through as the empty principal.
//
// The REST side authenticates the HTTP request itself and asserts the
// principal (auth.AssertedPrincipal) on its own road into the services,
// which only this process reaches: its guard (ForREST) takes the assertion
// as said. The guard of the gRPC listener refuses any call that carries one.
type Guard struct {
	authn    *auth.Authenticator // nil: authentication is off
	asserted bool                // the REST side's road: its assertion is taken
	log      *slog.Logger
	denials  *prometheus.CounterVec
}

// NewGuard makes the guard of the gRPC listener; authn nil turns
// authentication off. reg, if set, registers jetgate_denied_total.
func NewGuard(authn *auth.Authenticator, log *slog.Logger, reg prometheus.Registerer) *Guard {
	g := &Guard{authn: authn, log: log, denials: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jetgate_denied_total",
		Help: "Calls refused before any work, by reason (UNAUTHENTICATED, PERMISSION_DENIED).",
	}, []string{"reason"})}
	for _, reason := range [...]string{errs.Reason(errs.ErrUnauthenticated), errs.Reason(errs.ErrPermissionDenied)} {
		g.denials.WithLabelValues(reason)
	}
	if reg != nil {
		reg.MustRegister(g.denials)
	}
	return g
}

// ForREST is g for the REST side's road into the services (server.Local and
// the in-memory gRPC server of its streams), which no caller outside this
// process reaches: it takes the principal the gateway asserts, having
// authenticated the HTTP request. Its denials are counted with g's.
func (g *Guard) ForREST() *Guard {
	rest := *g
	rest.asserted = true
	return &rest
}

// named is a request that names a stream and a consumer.
type named interface{ GetStream() string }

func consumerOf(req any) string {
	switch r := req.(type) {
	case interface{ GetConsumer() string }:
		return r.GetConsumer()
	case *jetgatev1.CreateConsumerRequest: // the name is the config's
		return r.GetConfig().GetDurableName()
	}
	return ""
}

// unnamed is INVALID_ARGUMENT for a request that leaves out the stream, or
// the consumer it is about (a reviewer saw a create without a name refused
// as PERMISSION_DENIED on consumer "").
func unnamed(req any, r named) error {
	_, scoped := req.(interface{ GetConsumer() string })
	_, create := req.(*jetgatev1.CreateConsumerRequest)
	switch {
	case r.GetStream() == "":
		return fmt.Errorf("%w: stream is required", errs.ErrInvalidArgument)
	case create && consumerOf(req) == "":
		return fmt.Errorf("%w: config.durable_name is required: the consumer's name", errs.ErrInvalidArgument)
	case scoped && consumerOf(req) == "":
		return fmt.Errorf("%w: consumer is required", errs.ErrInvalidArgument)
	}
	return nil
}

// Unary is the guard as a unary interceptor.
func (g *Guard) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		ctx, err := g.check(ctx, info.FullMethod, req)
		if err != nil {
			return nil, err
		}
		ctx, stop := waitLapsing(ctx, req)
		defer stop()
		resp, err := h(ctx, req)
		if err != nil && errors.Is(context.Cause(ctx), errCredentialLapsed) {
			// Ended as a stream is; what it had leased is the orphan
			// pool's, as a canceled Fetch's.
			return nil, g.deny(ctx, info.FullMethod, auth.Principal(ctx), req, errCredentialLapsed)
		}
		return resp, err
	}
}

// Stream is the guard as a stream interceptor: the caller is authenticated
// when the stream opens and authorized on its request.
func (g *Guard) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if open(info.FullMethod) {
			return h(srv, ss)
		}
		ctx, err := g.check(ss.Context(), info.FullMethod, nil)
		if err != nil {
			return err
		}
		ctx, stop := lapsing(ctx)
		defer stop()
		err = h(srv, &guarded{ServerStream: ss, ctx: ctx, g: g, method: info.FullMethod})
		if errors.Is(context.Cause(ctx), errCredentialLapsed) {
			return g.deny(ctx, info.FullMethod, auth.Principal(ctx), nil, errCredentialLapsed)
		}
		return err
	}
}

type guarded struct {
	grpc.ServerStream
	ctx    context.Context
	g      *Guard
	method string
	done   bool
}

func (s *guarded) Context() context.Context { return s.ctx }

func (s *guarded) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if !s.done {
		s.done = true
		if err := s.g.authorize(s.ctx, s.method, m); err != nil {
			return err
		}
	}
	return nil
}

// check authenticates the caller of method and, when req is given,
// authorizes it; the returned context carries the principal.
func (g *Guard) check(ctx context.Context, method string, req any) (context.Context, error) {
	if open(method) {
		return ctx, nil
	}
	p, until, err := g.authenticate(ctx)
	if err != nil {
		return nil, g.deny(ctx, method, "", req, err)
	}
	ctx = auth.WithUntil(auth.WithPrincipal(ctx, p), until)
	if listings[method] {
		return g.authorizeListing(ctx, method, req)
	}
	if req != nil {
		if err := g.authorize(ctx, method, req); err != nil {
			return nil, err
		}
	}
	return ctx, nil
}

// authenticate says who calls, and until when its credential is taken
// (zero: for good).
func (g *Guard) authenticate(ctx context.Context) (string, time.Time, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if ps := md.Get(auth.AssertedPrincipal); len(ps) > 0 {
		if !g.asserted || len(ps) != 1 {
			return "", time.Time{}, fmt.Errorf("%w: an assertion of identity from outside the REST side", errs.ErrUnauthenticated)
		}
		return ps[0], assertedUntil(md), nil
	}
	creds := md.Get("authorization")
	if len(creds) > 1 { // as REST refuses several Authorization headers
		return "", time.Time{}, fmt.Errorf("%w: send one authorization metadata value, not several", errs.ErrInvalidArgument)
	}
	if g.authn == nil {
		return "", time.Time{}, nil
	}
	return g.authn.AuthenticateUntil(auth.Bearer(first(creds)), peerCert(ctx))
}

// assertedUntil is when the REST side says its caller's credential lapses;
// zero: never.
func assertedUntil(md metadata.MD) time.Time {
	vs := md.Get(auth.AssertedUntil)
	if len(vs) != 1 {
		return time.Time{}
	}
	ms, err := strconv.ParseInt(vs[0], 10, 64)
	if err != nil {
		return time.Unix(0, 0) // not the REST side's: lapsed
	}
	return time.UnixMilli(ms)
}

func (g *Guard) authorize(ctx context.Context, method string, req any) error {
	action, ok := actions[method]
	if !ok || g.authn == nil {
		return nil // another service (reflection): authenticated is enough
	}
	r, ok := req.(named)
	if !ok {
		return g.deny(ctx, method, auth.Principal(ctx), req, fmt.Errorf("%w: the request names no stream", errs.ErrPermissionDenied))
	}
	if err := unnamed(req, r); err != nil {
		return toStatus(err) // the caller's to fix, as without authentication; no grant names ""
	}
	if err := g.authn.Authorize(auth.Principal(ctx), action, r.GetStream(), consumerOf(req)); err != nil {
		return g.deny(ctx, method, auth.Principal(ctx), req, err)
	}
	return nil
}

// deny logs one line for a refused call (never its credentials), counts it
// and returns its status.
func (g *Guard) deny(ctx context.Context, method, principal string, req any, err error) error {
	reason := errs.Reason(err)
	g.denials.WithLabelValues(reason).Inc()
	attrs := []any{"method", method, "reason", reason, "principal", principal}
	if r, ok := req.(named); ok {
		attrs = append(attrs, "stream", r.GetStream(), "consumer", consumerOf(req))
	}
	if p, ok := peer.FromContext(ctx); ok {
		attrs = append(attrs, "peer", p.Addr.String())
	}
	g.log.Warn("call denied", append(attrs, "detail", err.Error())...)
	if errors.Is(err, errs.ErrUnauthenticated) {
		// The caller learns what to send, not what was wrong with it.
		err = fmt.Errorf("%w: %s", errs.ErrUnauthenticated, auth.CredentialsHint)
	}
	return toStatus(err)
}

// DeniedHTTP logs and counts a REST call that the gateway refused before
// it reached the chain (it authenticates the HTTP request itself).
func (g *Guard) DeniedHTTP(r *http.Request, err error) {
	reason := errs.Reason(err)
	g.denials.WithLabelValues(reason).Inc()
	g.log.Warn("call denied", "method", r.Method+" "+r.URL.Path, "reason", reason, "principal", "", "peer", r.RemoteAddr, "detail", err.Error())
}

func first(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

// peerCert is the caller's verified client certificate, if any.
func peerCert(ctx context.Context) *x509.Certificate {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.VerifiedChains) == 0 || len(ti.State.VerifiedChains[0]) == 0 {
		return nil
	}
	return ti.State.VerifiedChains[0][0]
}
