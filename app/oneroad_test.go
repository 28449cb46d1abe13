package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/jetgate/jetgate/api"
	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/auth"
	"github.com/jetgate/jetgate/internal/authtest"
)

// rpcRoute is one RPC of the protos and its REST route.
type rpcRoute struct {
	full         string // /jetgate.v1.ConsumerService/Fetch
	method       protoreflect.MethodDescriptor
	verb, path   string
	streaming    bool
	bodyWildcard bool
}

// everyRPC walks the protos' services: every RPC, with its REST route from
// the OpenAPI document generated from the same protos, the path's stream
// and consumer filled in.
func everyRPC(t *testing.T) []rpcRoute {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
			Parameters  []struct {
				In string `json:"in"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(api.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var out []rpcRoute
	for _, f := range []protoreflect.FileDescriptor{jetgatev1.File_jetgate_v1_consumer_proto, jetgatev1.File_jetgate_v1_stream_proto} {
		for i := range f.Services().Len() {
			s := f.Services().Get(i)
			for j := range s.Methods().Len() {
				m := s.Methods().Get(j)
				r := rpcRoute{full: "/" + string(s.FullName()) + "/" + string(m.Name()), method: m, streaming: m.IsStreamingServer()}
				for path, ops := range doc.Paths {
					for verb, op := range ops {
						if op.OperationID == string(s.Name())+"_"+string(m.Name()) {
							r.verb, r.path = strings.ToUpper(verb), path
							r.bodyWildcard = slices.ContainsFunc(op.Parameters, func(p struct {
								In string `json:"in"`
							}) bool {
								return p.In == "body"
							})
						}
					}
				}
				if r.path == "" {
					t.Fatalf("%s has no REST route in the OpenAPI document", m.FullName())
				}
				r.path = strings.NewReplacer("{stream}", "ORDERS", "{consumer}", "billing").Replace(r.path)
				out = append(out, r)
			}
		}
	}
	if len(out) < 15 {
		t.Fatalf("found %d RPCs in the protos; the walk is broken", len(out))
	}
	return out
}

// grpcAuthResult calls the RPC over gRPC as bearer, with the metadata md
// (pairs) besides, and says what the guard made of it: UNAUTHENTICATED,
// PERMISSION_DENIED, or OK for passed.
func grpcAuthResult(t *testing.T, conn *grpc.ClientConn, r rpcRoute, bearer string, md ...string) codes.Code {
	t.Helper()
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(withBearer(bearer), md...), 2*time.Second)
	defer cancel()
	req := dynamicpb.NewMessage(r.method.Input())
	if f := r.method.Input().Fields().ByName("stream"); f != nil {
		req.Set(f, protoreflect.ValueOfString("ORDERS"))
	}
	if f := r.method.Input().Fields().ByName("consumer"); f != nil {
		req.Set(f, protoreflect.ValueOfString("billing"))
	}
	var err error
	if r.streaming {
		var s grpc.ClientStream
		if s, err = conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, r.full); err == nil {
			if err = s.SendMsg(req); err == nil {
				_ = s.CloseSend()
				err = s.RecvMsg(dynamicpb.NewMessage(r.method.Output()))
			}
		}
	} else {
		err = conn.Invoke(ctx, r.full, req, dynamicpb.NewMessage(r.method.Output()))
	}
	return authResult(status.Code(err))
}

func authResult(c codes.Code) codes.Code {
	if c == codes.Unauthenticated || c == codes.PermissionDenied {
		return c
	}
	return codes.OK
}

// restAuthResult calls the RPC's REST route as bearer; it also fails the
// test if the route is not served (404 ROUTE_NOT_FOUND, 501).
func restAuthResult(t *testing.T, addr string, r rpcRoute, bearer string) codes.Code {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var body io.Reader
	if r.bodyWildcard {
		body = strings.NewReader(`{}`)
	}
	req, err := http.NewRequestWithContext(ctx, r.verb, "http://"+addr+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if errors.Is(err, context.DeadlineExceeded) {
		return codes.OK // admitted: a Fetch waiting for messages
	}
	if err != nil {
		t.Fatalf("%s %s: %v", r.verb, r.path, err)
	}
	defer resp.Body.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(resp.Body, head)
	if resp.StatusCode == http.StatusNotImplemented || strings.Contains(string(head[:n]), "ROUTE_NOT_FOUND") {
		t.Fatalf("%s %s (%s) is not served over REST: %d %s", r.verb, r.path, r.full, resp.StatusCode, head[:n])
	}
	for _, c := range []codes.Code{codes.Unauthenticated, codes.PermissionDenied} {
		if resp.StatusCode == runtime.HTTPStatusFromCode(c) {
			return c
		}
	}
	return codes.OK
}

// Every RPC of the protos answers over REST, by the one road to the gRPC
// server, with the same authentication and authorization result as over
// gRPC, for a caller without credentials and for principals of different
// grants: a new RPC cannot be forgotten on either side.
func TestEveryRPCAnswersOverRESTAsOverGRPC(t *testing.T) {
	p, _, _ := secured(t)
	conn := grpcConn(t, p.GRPC)
	for _, r := range everyRPC(t) {
		for _, bearer := range []string{"", "not-a-key", "dashboard-key", "billing-key", "ops-key"} {
			g, h := grpcAuthResult(t, conn, r, bearer), restAuthResult(t, p.HTTP, r, bearer)
			if g != h {
				t.Errorf("%s as %q: gRPC %v, REST %v", r.full, bearer, g, h)
			}
		}
	}
}

// The REST side's assertion of a principal is taken only on its own road:
// on the gRPC listener, every RPC that carries one is refused, whoever the
// caller is.
func TestTheRESTAssertionIsRefusedOnTheGRPCListener(t *testing.T) {
	p, _, _ := secured(t)
	conn := grpcConn(t, p.GRPC)
	for _, r := range everyRPC(t) {
		if strings.HasPrefix(r.full, "/grpc.health.v1.Health/") {
			continue // open to anyone: it asks no identity
		}
		for _, bearer := range []string{"", "ops-key"} {
			if got := grpcAuthResult(t, conn, r, bearer, auth.AssertedPrincipal, "ops"); got != codes.Unauthenticated {
				t.Errorf("%s as %q asserting ops: %v, want UNAUTHENTICATED", r.full, bearer, got)
			}
		}
	}
}

// A principal's name may be any text: over REST (whose identity reaches
// the gRPC chain as metadata) as over gRPC.
func TestAPrincipalOfAnyNameIsServedOverREST(t *testing.T) {
	file := writeConfig(t, fmt.Sprintf(`
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers: [{stream: ORDERS, name: billing}]
auth:
  api_keys: [{principal: "zoë\u202e", sha256: %s}]
  grants: [{principal: "zoë\u202e", stream: ORDERS, consumers: [billing], actions: [fetch]}]
`, authtest.KeyHash("zoe-key")))
	p := start(t, fileOptions(t, file))
	code, body := restCaller{base: "http://" + p.HTTP}.post(t, "zoe-key", "/v1/streams/ORDERS/consumers/billing:fetch", `{"expires":"0s"}`)
	if code != codes.OK {
		t.Fatalf("REST fetch as a principal with a non-ASCII name: %v %v", code, body)
	}
}
