package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"google.golang.org/protobuf/types/known/timestamppb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/authtest"
)

// secured runs jetgate with API keys, a JWT issuer and grants:
// billing-svc fetches and settles billing, dashboard reads everything,
// audit-svc fetches and settles audit, alice (a JWT) fetches and settles
// billing.
func secured(t *testing.T) (*Process, *authtest.Issuer, *authtest.Issuer) {
	t.Helper()
	idp := authtest.NewIssuer(t, "https://idp.test", "k1")
	stranger := authtest.NewIssuer(t, "https://idp.test", "k2")
	file := writeConfig(t, fmt.Sprintf(`
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers: [{stream: ORDERS, name: billing}, {stream: ORDERS, name: audit}]
auth:
  api_keys:
    - {principal: billing-svc, sha256: %s}
    - {principal: dashboard, sha256: %s}
    - {principal: audit-svc, sha256: %s}
    - {principal: ops, sha256: %s}
    - {principal: scraper, sha256: %s}
  jwt: {jwks_file: %q, issuer: "https://idp.test", audience: jetgate}
  grants:
    - {principal: billing-svc, stream: ORDERS, consumers: [billing], actions: [fetch, settle, publish]}
    - {principal: dashboard, stream: "*", consumers: ["*"], actions: [read]}
    - {principal: audit-svc, stream: ORDERS, consumers: [audit], actions: [fetch, settle]}
    - {principal: alice, stream: ORDERS, consumers: [billing], actions: [fetch, settle]}
    - {principal: ops, stream: ORDERS, consumers: ["*"], actions: [manage]}
    - {principal: scraper, stream: "*", actions: [metrics]}
`, authtest.KeyHash("billing-key"), authtest.KeyHash("dashboard-key"), authtest.KeyHash("audit-key"), authtest.KeyHash("ops-key"),
		authtest.KeyHash("scraper-key"),
		authtest.WriteJWKS(t, idp)))
	o := fileOptions(t, file)
	o.NATSListen = "" // no port but gRPC and HTTP
	o.Given["nats-listen"] = true
	return start(t, o), idp, stranger
}

// caller is one way of calling jetgate: gRPC or REST, with a credential.
type caller interface {
	fetch(t *testing.T, bearer, consumer string) (code codes.Code, reason string, msgs []string)
	ack(t *testing.T, bearer string, tokens ...string) (code codes.Code, failureReasons []string)
}

type grpcCaller struct {
	c jetgatev1.ConsumerServiceClient
}

func withBearer(bearer string) context.Context {
	ctx := context.Background()
	if bearer == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+bearer)
}

func reasonOf(err error) string {
	for _, d := range status.Convert(err).Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			return ei.GetReason()
		}
	}
	return ""
}

func (g grpcCaller) fetch(t *testing.T, bearer, consumer string) (codes.Code, string, []string) {
	ctx, cancel := context.WithTimeout(withBearer(bearer), 8*time.Second)
	defer cancel()
	resp, err := g.c.Fetch(ctx, &jetgatev1.FetchRequest{Stream: "ORDERS", Consumer: consumer, Expires: durationpb.New(time.Second)})
	var toks []string
	for _, m := range resp.GetMessages() {
		toks = append(toks, m.GetToken())
	}
	return status.Code(err), reasonOf(err), toks
}

func (g grpcCaller) ack(t *testing.T, bearer string, tokens ...string) (codes.Code, []string) {
	ctx, cancel := context.WithTimeout(withBearer(bearer), 8*time.Second)
	defer cancel()
	resp, err := g.c.Ack(ctx, &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "billing", Tokens: tokens})
	var rs []string
	for _, f := range resp.GetFailures() {
		rs = append(rs, f.GetReason()+"/"+codes.Code(f.GetCode()).String())
	}
	return status.Code(err), rs
}

type restCaller struct{ base string }

// httpCodes are the HTTP statuses each code maps to, as grpc-gateway maps them.
var httpCodes = map[int]codes.Code{200: codes.OK, 400: codes.InvalidArgument, 401: codes.Unauthenticated, 403: codes.PermissionDenied}

func (r restCaller) post(t *testing.T, bearer, path, body string) (codes.Code, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.base+path, strings.NewReader(body))
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
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	if resp.StatusCode == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("401 without WWW-Authenticate: Bearer (got %q)", resp.Header.Get("WWW-Authenticate"))
	}
	code, ok := httpCodes[resp.StatusCode]
	if !ok {
		t.Fatalf("POST %s: status %d %s", path, resp.StatusCode, raw)
	}
	return code, out
}

func restReason(body map[string]any) string {
	ds, _ := body["details"].([]any)
	for _, d := range ds {
		if m, _ := d.(map[string]any); m["reason"] != nil {
			return m["reason"].(string)
		}
	}
	return ""
}

func (r restCaller) fetch(t *testing.T, bearer, consumer string) (codes.Code, string, []string) {
	code, body := r.post(t, bearer, "/v1/streams/ORDERS/consumers/"+consumer+":fetch", `{"expires":"1s"}`)
	var toks []string
	ms, _ := body["messages"].([]any)
	for _, m := range ms {
		toks = append(toks, m.(map[string]any)["token"].(string))
	}
	return code, restReason(body), toks
}

func (r restCaller) ack(t *testing.T, bearer string, tokens ...string) (codes.Code, []string) {
	b, _ := json.Marshal(map[string]any{"tokens": tokens})
	code, body := r.post(t, bearer, "/v1/streams/ORDERS/consumers/billing:ack", string(b))
	var rs []string
	fs, _ := body["failures"].([]any)
	for _, f := range fs {
		m := f.(map[string]any)
		rs = append(rs, fmt.Sprintf("%s/%s", m["reason"], codes.Code(int(m["code"].(float64)))))
	}
	return code, rs
}

// The same matrix over gRPC and over REST: every bad credential is
// UNAUTHENTICATED, every missing grant PERMISSION_DENIED, and another
// principal's token fails on its own with TOKEN_WRONG_PRINCIPAL.
func TestAuthMatrix(t *testing.T) {
	p, idp, stranger := secured(t)
	conn := grpcConn(t, p.GRPC)
	for name, c := range map[string]caller{
		"grpc": grpcCaller{jetgatev1.NewConsumerServiceClient(conn)},
		"rest": restCaller{"http://" + p.HTTP},
	} {
		t.Run(name, func(t *testing.T) {
			tests := []struct {
				name, bearer, consumer string
				code                   codes.Code
				reason                 string
			}{
				{"no credentials", "", "billing", codes.Unauthenticated, "UNAUTHENTICATED"},
				{"wrong key", "not-a-key", "billing", codes.Unauthenticated, "UNAUTHENTICATED"},
				{"expired JWT", idp.Token("alice", "jetgate", -time.Hour), "billing", codes.Unauthenticated, "UNAUTHENTICATED"},
				{"JWT for another audience", idp.Token("alice", "someone-else", time.Hour), "billing", codes.Unauthenticated, "UNAUTHENTICATED"},
				{"JWT signed by a key not in the JWKS", stranger.Token("alice", "jetgate", time.Hour), "billing", codes.Unauthenticated, "UNAUTHENTICATED"},
				{"alg none JWT", authtest.NoneToken("https://idp.test", "alice", "jetgate"), "billing", codes.Unauthenticated, "UNAUTHENTICATED"},
				{"right key, no grant for the consumer", "audit-key", "billing", codes.PermissionDenied, "PERMISSION_DENIED"},
				{"read only, trying to fetch", "dashboard-key", "billing", codes.PermissionDenied, "PERMISSION_DENIED"},
				{"right key", "billing-key", "billing", codes.OK, ""},
				{"right JWT", idp.Token("alice", "jetgate", time.Hour), "billing", codes.OK, ""},
			}
			for _, tt := range tests {
				code, reason, _ := c.fetch(t, tt.bearer, tt.consumer)
				if code != tt.code || reason != tt.reason {
					t.Errorf("%s: %v %q; want %v %q", tt.name, code, reason, tt.code, tt.reason)
				}
			}
		})
	}

	// Another principal's token: billing-svc's lease, settled by alice.
	_, sc := grpcClients(t, p.GRPC)
	for range 2 {
		if _, err := sc.Publish(withBearer("billing-key"), &jetgatev1.PublishRequest{Stream: "ORDERS", Subject: "orders.x", Data: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	g, r := grpcCaller{jetgatev1.NewConsumerServiceClient(conn)}, restCaller{"http://" + p.HTTP}
	for name, c := range map[string]caller{"grpc": g, "rest": r} {
		_, _, toks := c.fetch(t, "billing-key", "billing")
		if len(toks) != 1 {
			t.Fatalf("%s: fetched %d, want 1", name, len(toks))
		}
		alice := idp.Token("alice", "jetgate", time.Hour)
		code, fails := c.ack(t, alice, toks[0])
		if code != codes.OK || len(fails) != 1 || fails[0] != "TOKEN_WRONG_PRINCIPAL/PermissionDenied" {
			t.Errorf("%s: alice acking billing-svc's token: %v %v; want one TOKEN_WRONG_PRINCIPAL/PermissionDenied", name, code, fails)
		}
		if code, fails := c.ack(t, "billing-key", toks[0]); code != codes.OK || len(fails) != 0 {
			t.Errorf("%s: the holder's ack: %v %v", name, code, fails)
		}
	}
}

// Pause, Resume and Unpin need the manage grant, on gRPC and REST alike:
// a caller that may fetch and settle may not pause the consumer for all;
// PublishBatch needs publish.
func TestManageNeedsTheManageGrant(t *testing.T) {
	p, _, _ := secured(t)
	conn := grpcConn(t, p.GRPC)
	cc := jetgatev1.NewConsumerServiceClient(conn)
	until := time.Now().Add(time.Hour).UTC()
	grpcCalls := map[string]func(ctx context.Context) error{
		"pause": func(ctx context.Context) error {
			_, err := cc.Pause(ctx, &jetgatev1.PauseRequest{Stream: "ORDERS", Consumer: "billing", PauseUntil: timestamppb.New(until)})
			return err
		},
		"resume": func(ctx context.Context) error {
			_, err := cc.Resume(ctx, &jetgatev1.ResumeRequest{Stream: "ORDERS", Consumer: "billing"})
			return err
		},
	}
	restBodies := map[string]string{"pause": fmt.Sprintf(`{"pauseUntil":%q}`, until.Format(time.RFC3339)), "resume": `{}`}
	r := restCaller{"http://" + p.HTTP}
	for _, verb := range []string{"pause", "resume"} {
		for _, tt := range []struct {
			bearer string
			code   codes.Code
		}{{"", codes.Unauthenticated}, {"billing-key", codes.PermissionDenied}, {"dashboard-key", codes.PermissionDenied}, {"ops-key", codes.OK}} {
			ctx, cancel := context.WithTimeout(withBearer(tt.bearer), 8*time.Second)
			if got := status.Code(grpcCalls[verb](ctx)); got != tt.code {
				t.Errorf("gRPC %s as %q: %v; want %v", verb, tt.bearer, got, tt.code)
			}
			cancel()
			if got, body := r.post(t, tt.bearer, "/v1/streams/ORDERS/consumers/billing:"+verb, restBodies[verb]); got != tt.code {
				t.Errorf("REST %s as %q: %v %v; want %v", verb, tt.bearer, got, body, tt.code)
			}
		}
	}
	// Through the guard, an Unpin of a consumer without groups reaches the
	// service and is refused there.
	if got, _ := r.post(t, "ops-key", "/v1/streams/ORDERS/consumers/billing:unpin", `{}`); got != codes.InvalidArgument {
		t.Errorf("REST unpin of a consumer without groups: %v; want InvalidArgument", got)
	}
	if got, _ := r.post(t, "billing-key", "/v1/streams/ORDERS/consumers/billing:unpin", `{}`); got != codes.PermissionDenied {
		t.Errorf("REST unpin without the grant: %v; want PermissionDenied", got)
	}
	// PublishBatch needs the publish grant: billing-svc's passes the guard
	// (and the stream, without allow_atomic, refuses the batch).
	sc := jetgatev1.NewStreamServiceClient(conn)
	batch := &jetgatev1.PublishBatchRequest{Stream: "ORDERS", Messages: []*jetgatev1.BatchMessage{{Subject: "orders.b"}}}
	for _, tt := range []struct {
		bearer string
		code   codes.Code
	}{{"", codes.Unauthenticated}, {"dashboard-key", codes.PermissionDenied}, {"ops-key", codes.PermissionDenied}, {"billing-key", codes.FailedPrecondition}} {
		ctx, cancel := context.WithTimeout(withBearer(tt.bearer), 8*time.Second)
		_, err := sc.PublishBatch(ctx, batch)
		cancel()
		if got := status.Code(err); got != tt.code {
			t.Errorf("gRPC PublishBatch as %q: %v; want %v", tt.bearer, err, tt.code)
		}
	}
	if got, _ := r.post(t, "dashboard-key", "/v1/streams/ORDERS:publishBatch", `{"messages":[{"subject":"orders.b"}]}`); got != codes.PermissionDenied {
		t.Errorf("REST PublishBatch without the grant: %v; want PermissionDenied", got)
	}
}

// With auth on, nothing the process listens on serves an unauthenticated
// caller but the probes: not the API over gRPC or REST, not reflection,
// not /metrics; and the embedded NATS server has no port at all.
func TestNoPortServesAnUnauthenticatedCaller(t *testing.T) {
	p, _, _ := secured(t)
	if p.NATS != "" {
		t.Fatalf("the embedded NATS server listens on %s", p.NATS)
	}
	conn := grpcConn(t, p.GRPC)
	ctx := withBearer("")
	if _, err := jetgatev1.NewStreamServiceClient(conn).Publish(ctx, &jetgatev1.PublishRequest{Stream: "ORDERS", Subject: "orders.x"}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("Publish without credentials: %v", err)
	}
	if _, err := jetgatev1.NewConsumerServiceClient(conn).GetConsumer(ctx, &jetgatev1.GetConsumerRequest{Stream: "ORDERS", Consumer: "billing"}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("GetConsumer without credentials: %v", err)
	}
	rs, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err == nil {
		_ = rs.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}})
		_, err = rs.Recv()
	}
	if status.Code(err) != codes.Unauthenticated {
		t.Errorf("reflection without credentials: %v", err)
	}
	for _, path := range []string{"/metrics", "/v1/streams/ORDERS/consumers/billing"} {
		resp, err := http.Get("http://" + p.HTTP + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without credentials: %d", path, resp.StatusCode)
		}
	}
	resp, err := http.Post("http://"+p.HTTP+"/v1/streams/ORDERS:publish", "application/json", bytes.NewReader([]byte(`{"subject":"orders.x"}`)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("publish over REST without credentials: %d", resp.StatusCode)
	}
	for _, probe := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get("http://" + p.HTTP + probe)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || strings.Contains(string(raw), "ORDERS") {
			t.Errorf("%s: %d %s; probes stay open and reveal no configuration", probe, resp.StatusCode, raw)
		}
	}
}

// /metrics names every tenant's consumers: it is served only to a principal
// with a grant of the metrics action, never on a tenant's fetch, publish or
// read grant.
func TestMetricsNeedTheirOwnGrant(t *testing.T) {
	p, _, _ := secured(t)
	for _, tt := range []struct {
		key  string
		want int
	}{
		{"billing-key", http.StatusForbidden},
		{"dashboard-key", http.StatusForbidden},
		{"scraper-key", http.StatusOK},
	} {
		req, err := http.NewRequest(http.MethodGet, "http://"+p.HTTP+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tt.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("GET /metrics with %s: %d; want %d", tt.key, resp.StatusCode, tt.want)
		}
		if tt.want != http.StatusOK && strings.Contains(string(raw), "jetgate_") {
			t.Errorf("GET /metrics with %s leaked series: %.200s", tt.key, raw)
		}
	}
}
