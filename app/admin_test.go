package app

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/authtest"
)

// seekAndAdmin runs jetgate with grants for Seek and for consumers through
// the API: replay may seek billing, team-a may manage consumers team-a-*,
// billing-svc may only fetch and settle.
func seekAndAdmin(t *testing.T) *Process {
	t.Helper()
	file := writeConfig(t, fmt.Sprintf(`
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers: [{stream: ORDERS, name: billing}]
admin: {streams: [ORDERS], consumers: ["team-*"]}
auth:
  api_keys:
    - {principal: billing-svc, sha256: %s}
    - {principal: replay, sha256: %s}
    - {principal: team-a, sha256: %s}
  grants:
    - {principal: billing-svc, stream: ORDERS, consumers: [billing], actions: [fetch, settle]}
    - {principal: replay, stream: ORDERS, consumers: [billing], actions: [seek]}
    - {principal: team-a, stream: ORDERS, consumers: ["team-a-*"], actions: [admin, fetch, settle, read]}
`, authtest.KeyHash("billing-key"), authtest.KeyHash("replay-key"), authtest.KeyHash("team-a-key")))
	o := fileOptions(t, file)
	o.NATSListen = ""
	o.Given["nats-listen"] = true
	return start(t, o)
}

// restDo calls method path with body as bearer, and returns the status as
// a gRPC code.
func restDo(t *testing.T, p *Process, bearer, method, path, body string) codes.Code {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), method, "http://"+p.HTTP+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return codes.OK
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusNotFound:
		return codes.NotFound
	case http.StatusBadRequest:
		return codes.InvalidArgument
	}
	return codes.Unknown
}

// Seek needs the seek grant, and Create, Update and Delete the admin grant
// on the consumer's name, the same over gRPC and REST: without it 403 and
// PERMISSION_DENIED, and nothing changes.
func TestSeekAndAdminNeedTheirGrants(t *testing.T) {
	p := seekAndAdmin(t)
	conn, err := grpc.NewClient(p.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	cc := jetgatev1.NewConsumerServiceClient(conn)
	grpcAs := func(bearer string, call func(ctx context.Context) error) codes.Code {
		ctx, cancel := context.WithTimeout(withBearer(bearer), 8*time.Second)
		defer cancel()
		return status.Code(call(ctx))
	}
	seek := func(ctx context.Context) error {
		_, err := cc.Seek(ctx, &jetgatev1.SeekRequest{Stream: "ORDERS", Consumer: "billing", Target: &jetgatev1.SeekRequest_AckFloor{AckFloor: true}})
		return err
	}
	for _, tt := range []struct {
		bearer string
		code   codes.Code
	}{{"", codes.Unauthenticated}, {"billing-key", codes.PermissionDenied}, {"team-a-key", codes.PermissionDenied}, {"replay-key", codes.OK}} {
		if got := grpcAs(tt.bearer, seek); got != tt.code {
			t.Errorf("gRPC Seek as %q: %v; want %v", tt.bearer, got, tt.code)
		}
		if got := restDo(t, p, tt.bearer, "POST", "/v1/streams/ORDERS/consumers/billing:seek", `{"ackFloor": true}`); got != tt.code {
			t.Errorf("REST seek as %q: %v; want %v", tt.bearer, got, tt.code)
		}
	}

	createIn := func(name string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			_, err := cc.CreateConsumer(ctx, &jetgatev1.CreateConsumerRequest{Stream: "ORDERS", Config: &jetgatev1.ConsumerConfig{DurableName: name}})
			return err
		}
	}
	// team-a may not make team-b's consumer, nor may a caller without admin.
	if got := grpcAs("team-a-key", createIn("team-b-x")); got != codes.PermissionDenied {
		t.Errorf("gRPC create team-b-x as team-a: %v; want PermissionDenied", got)
	}
	if got := restDo(t, p, "team-a-key", "POST", "/v1/streams/ORDERS/consumers", `{"config": {"durableName": "team-b-x"}}`); got != codes.PermissionDenied {
		t.Errorf("REST create team-b-x as team-a: %v; want PermissionDenied", got)
	}
	if got := restDo(t, p, "billing-key", "POST", "/v1/streams/ORDERS/consumers", `{"config": {"durableName": "team-a-x"}}`); got != codes.PermissionDenied {
		t.Errorf("REST create as billing-svc: %v; want PermissionDenied", got)
	}
	// team-a makes its own over REST, fetches from it, updates and deletes it.
	if got := restDo(t, p, "team-a-key", "POST", "/v1/streams/ORDERS/consumers", `{"config": {"durableName": "team-a-x", "ackWait": "10s"}}`); got != codes.OK {
		t.Fatalf("REST create team-a-x as team-a: %v", got)
	}
	if got := restDo(t, p, "team-a-key", "POST", "/v1/streams/ORDERS/consumers/team-a-x:fetch", `{"batch": 1, "expires": "100ms"}`); got != codes.OK {
		t.Errorf("REST fetch from team-a-x: %v", got)
	}
	for _, tt := range []struct {
		bearer string
		code   codes.Code
	}{{"billing-key", codes.PermissionDenied}, {"team-a-key", codes.OK}} {
		if got := restDo(t, p, tt.bearer, "PATCH", "/v1/streams/ORDERS/consumers/team-a-x", `{"config": {"ackWait": "5s"}, "updateMask": "ackWait"}`); got != tt.code {
			t.Errorf("REST update as %q: %v; want %v", tt.bearer, got, tt.code)
		}
	}
	if ci := consumerInfoOver(t, cc, "team-a-key", "team-a-x"); ci.GetAckWait().AsDuration() != 5*time.Second || ci.GetMetadata()["jetgate.created_by"] != "team-a" {
		t.Errorf("after the update: %v", ci)
	}
	if got := restDo(t, p, "billing-key", "DELETE", "/v1/streams/ORDERS/consumers/team-a-x", ""); got != codes.PermissionDenied {
		t.Errorf("REST delete as billing-svc: %v; want PermissionDenied", got)
	}
	if got := restDo(t, p, "team-a-key", "DELETE", "/v1/streams/ORDERS/consumers/team-a-x", ""); got != codes.OK {
		t.Errorf("REST delete as team-a: %v", got)
	}
	if got := restDo(t, p, "team-a-key", "GET", "/v1/streams/ORDERS/consumers/team-a-x", ""); got != codes.NotFound {
		t.Errorf("REST get after delete: %v; want NotFound", got)
	}
}

func consumerInfoOver(t *testing.T, cc jetgatev1.ConsumerServiceClient, bearer, name string) *jetgatev1.ConsumerConfig {
	t.Helper()
	ctx, cancel := context.WithTimeout(withBearer(bearer), 8*time.Second)
	defer cancel()
	r, err := cc.GetConsumer(ctx, &jetgatev1.GetConsumerRequest{Stream: "ORDERS", Consumer: name})
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	return r.GetConfig()
}
