package server_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/auth"
	"github.com/jetgate/jetgate/internal/authtest"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
	"github.com/jetgate/jetgate/server"
)

// guarded starts a replica behind the guard with two API keys: "alice"
// may fetch and settle billing, "bob" may only read it.
func guarded(t *testing.T) (*harness, *gwtest.Replica, *server.Guard) {
	t.Helper()
	h := newHarness(t)
	a, err := auth.New(auth.Config{
		APIKeys: []auth.APIKey{{Principal: "alice", SHA256: authtest.KeyHash("alice-key")}, {Principal: "bob", SHA256: authtest.KeyHash("bob-key")}},
		Grants: []auth.Grant{
			{Principal: "alice", Stream: stream, Consumers: []string{consumer}, Actions: []auth.Action{auth.ActionFetch, auth.ActionSettle}},
			{Principal: "bob", Stream: stream, Consumers: []string{consumer}, Actions: []auth.Action{auth.ActionRead, auth.ActionSettle}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	g := server.NewGuard(a, quietLog(), nil)
	r := gwtest.Start(t, replica.Options{
		Conn:      natstest.Connect(t, h.ns),
		Consumers: []coreconsumer.Config{{Stream: stream, Name: consumer}},
		Keys:      token.RandomKeyring(),
	}, grpc.ChainUnaryInterceptor(g.Unary()), grpc.ChainStreamInterceptor(g.Stream()))
	return h, r, g
}

func as(ctx context.Context, kv ...string) context.Context {
	return metadata.NewOutgoingContext(ctx, metadata.Pairs(kv...))
}

func TestGuardAuthenticatesAndAuthorizesBeforeAnyWork(t *testing.T) {
	h, r, g := guarded(t)
	h.publish(1)
	ctx := context.Background()
	fetch := func(ctx context.Context) (*jetgatev1.FetchResponse, error) {
		return r.Consumers.Fetch(ctx, &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Expires: durationpb.New(time.Second)})
	}
	_, err := fetch(ctx)
	wantCode(t, err, codes.Unauthenticated, "UNAUTHENTICATED")
	_, err = fetch(as(ctx, "authorization", "Bearer wrong"))
	wantCode(t, err, codes.Unauthenticated, "UNAUTHENTICATED")
	_, err = fetch(as(ctx, "authorization", "Bearer bob-key"))
	wantCode(t, err, codes.PermissionDenied, "PERMISSION_DENIED")
	// Several credentials are refused, as REST refuses several
	// Authorization headers, whichever comes first.
	_, err = fetch(as(ctx, "authorization", "Bearer alice-key", "authorization", "Bearer wrong"))
	wantCode(t, err, codes.InvalidArgument, "INVALID_ARGUMENT")
	// A caller of the gRPC listener cannot claim an identity with the REST
	// side's assertion, with a credential of its own or without.
	_, err = fetch(as(ctx, auth.AssertedPrincipal, "alice"))
	wantCode(t, err, codes.Unauthenticated, "UNAUTHENTICATED")
	_, err = fetch(as(ctx, auth.AssertedPrincipal, "alice", "authorization", "Bearer bob-key"))
	wantCode(t, err, codes.Unauthenticated, "UNAUTHENTICATED")
	if ci := h.info(consumer); ci.NumAckPending != 0 || ci.Delivered.Stream != 0 {
		t.Fatalf("a refused Fetch leased a message: %+v", ci)
	}

	resp, err := fetch(as(ctx, "authorization", "Bearer alice-key"))
	if err != nil || len(resp.GetMessages()) != 1 {
		t.Fatalf("alice's fetch: %v %v", resp, err)
	}
	tok := resp.GetMessages()[0].GetToken()
	// Bob may settle, but not alice's token: it is bound to her.
	ack, err := r.Consumers.Ack(as(ctx, "authorization", "Bearer bob-key"), &jetgatev1.AckRequest{Stream: stream, Consumer: consumer, Tokens: []string{tok}})
	if err != nil {
		t.Fatal(err)
	}
	wantFailure(t, ack.GetFailures(), 0, "TOKEN_WRONG_PRINCIPAL")
	if ack.GetFailures()[0].GetCode() != int32(codes.PermissionDenied) {
		t.Fatalf("code %d; want PERMISSION_DENIED", ack.GetFailures()[0].GetCode())
	}
	ack, err = r.Consumers.Ack(as(ctx, "authorization", "Bearer alice-key"), &jetgatev1.AckRequest{Stream: stream, Consumer: consumer, Tokens: []string{tok}})
	if err != nil || len(ack.GetFailures()) != 0 {
		t.Fatalf("alice's ack: %v %v", ack, err)
	}

	// On the REST side's own road, the assertion is the caller, and is
	// authorized as the key would be.
	rest := g.ForREST().Unary()
	call := func(md metadata.MD, method string, req any) (string, error) {
		var principal string
		_, err := rest(metadata.NewIncomingContext(ctx, md), req, &grpc.UnaryServerInfo{FullMethod: method},
			func(ctx context.Context, _ any) (any, error) { principal = auth.Principal(ctx); return nil, nil })
		return principal, err
	}
	fetchReq := &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer}
	if p, err := call(metadata.Pairs(auth.AssertedPrincipal, "alice"), jetgatev1.ConsumerService_Fetch_FullMethodName, fetchReq); err != nil || p != "alice" {
		t.Fatalf("alice asserted on the REST road: principal %q, %v", p, err)
	}
	_, err = call(metadata.Pairs(auth.AssertedPrincipal, "bob"), jetgatev1.ConsumerService_Fetch_FullMethodName, fetchReq)
	wantCode(t, err, codes.PermissionDenied, "PERMISSION_DENIED")
	_, err = call(metadata.Pairs(auth.AssertedPrincipal, "alice", auth.AssertedPrincipal, "bob"), jetgatev1.ConsumerService_Fetch_FullMethodName, fetchReq)
	wantCode(t, err, codes.Unauthenticated, "UNAUTHENTICATED")
	// The listener's own guard is not changed by it.
	_, err = fetch(as(ctx, auth.AssertedPrincipal, "alice"))
	wantCode(t, err, codes.Unauthenticated, "UNAUTHENTICATED")
}

// A request without the stream or consumer it is about is INVALID_ARGUMENT
// saying what is missing, as without authentication, not PERMISSION_DENIED
// on consumer "" (a reviewer's finding, on a create without a name).
func TestAnUnnamedRequestIsInvalidNotDenied(t *testing.T) {
	_, r, _ := guarded(t)
	alice := as(context.Background(), "authorization", "Bearer alice-key")
	_, err := r.Consumers.Fetch(alice, &jetgatev1.FetchRequest{Stream: stream})
	wantCode(t, err, codes.InvalidArgument, "INVALID_ARGUMENT")
	_, err = r.Consumers.Fetch(alice, &jetgatev1.FetchRequest{Consumer: consumer})
	wantCode(t, err, codes.InvalidArgument, "INVALID_ARGUMENT")
	_, err = r.Consumers.CreateConsumer(alice, &jetgatev1.CreateConsumerRequest{Stream: stream, Config: &jetgatev1.ConsumerConfig{}})
	wantCode(t, err, codes.InvalidArgument, "INVALID_ARGUMENT")
	if !strings.Contains(statusMessage(err), "durable_name") {
		t.Errorf("a create without a name: %v; want it to say durable_name is required", err)
	}
	// Unauthenticated, it is refused for that first.
	_, err = r.Consumers.Fetch(context.Background(), &jetgatev1.FetchRequest{Stream: stream})
	wantCode(t, err, codes.Unauthenticated, "UNAUTHENTICATED")
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Redrive republishes with jetgate's own rights: it needs the redrive
// grant; settle, which alice has, is not enough.
func TestRedriveNeedsTheRedriveGrant(t *testing.T) {
	_, r, _ := guarded(t)
	_, err := r.Consumers.Redrive(as(context.Background(), "authorization", "Bearer alice-key"),
		&jetgatev1.RedriveRequest{Stream: stream, Consumer: consumer})
	wantCode(t, err, codes.PermissionDenied, "PERMISSION_DENIED")
}
