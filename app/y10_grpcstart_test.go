package app

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/authtest"
	"github.com/jetgate/jetgate/internal/natstest"
)

// runWaitingGRPC is runWaiting with the gRPC listener on a port known
// beforehand, and a connection to it that the test keeps throughout.
func runWaitingGRPC(t *testing.T, set func(*Options)) (*waitingRun, *grpc.ClientConn) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
	w := runWaiting(t, func(o *Options) {
		o.GRPCAddr = addr
		if set != nil {
			set(o)
		}
	})
	return w, grpcConn(t, addr)
}

// untilHealthAnswers waits until Health's Check answers on conn, each try
// bounded by 2s, and returns its status.
func untilHealthAnswers(t *testing.T, w *waitingRun, conn *grpc.ClientConn) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	var got healthpb.HealthCheckResponse_ServingStatus
	var last error
	natstest.Eventually(t, 15*time.Second, "Health's Check answers", func() bool {
		select {
		case <-w.ended:
			t.Fatalf("jetgate stopped while waiting for NATS: %v\nlog:\n%s", w.err, w.log)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		r, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		got, last = r.GetStatus(), err
		return err == nil
	})
	if last != nil {
		t.Fatalf("Health's Check: %v", last)
	}
	return got
}

// refusedStarting fails the test unless err is the refusal of a call while
// start-up waits: UNAVAILABLE, NATS_UNAVAILABLE, REST's words.
func refusedStarting(t *testing.T, what string, err error, took time.Duration) {
	t.Helper()
	st := status.Convert(err)
	var info *errdetails.ErrorInfo
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			info = ei
		}
	}
	if st.Code() != codes.Unavailable || info.GetReason() != "NATS_UNAVAILABLE" || info.GetDomain() != "jetgate" ||
		st.Message() != "jetgate is starting: waiting for NATS JetStream" {
		t.Fatalf("%s while start-up waits (after %v): %v, ErrorInfo %v; want UNAVAILABLE NATS_UNAVAILABLE (domain jetgate) \"jetgate is starting: waiting for NATS JetStream\"",
			what, took.Round(time.Millisecond), err, info)
	}
	if took > 2*time.Second {
		t.Fatalf("%s was refused after %v; want at once", what, took.Round(time.Millisecond))
	}
}

// While start-up waits for NATS, the gRPC listener answers as the REST one
// does: Health's Check NOT_SERVING, a Watch NOT_SERVING, a Fetch and a
// Consume UNAVAILABLE NATS_UNAVAILABLE at once; once NATS is up, the same
// Watch says SERVING and the same connection fetches. Before the mend the
// listener was bound and not served until ready: a call on it hung until
// its own deadline, and so did a Kubernetes gRPC probe.
func TestY10GRPCAnswersWhileStartUpWaits(t *testing.T) {
	w, conn := runWaitingGRPC(t, nil)
	w.untilProbe(t, "/healthz", http.StatusOK, 10*time.Second)
	if got := untilHealthAnswers(t, w, conn); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("Health's Check while start-up waits: %v; want NOT_SERVING", got)
	}
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	watch, err := healthpb.NewHealthClient(conn).Watch(watchCtx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := watch.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("Health's Watch while start-up waits: %v, %v; want NOT_SERVING", r.GetStatus(), err)
	}

	cc, sc := jetgatev1.NewConsumerServiceClient(conn), jetgatev1.NewStreamServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	began := time.Now()
	_, err = cc.Fetch(ctx, &jetgatev1.FetchRequest{Stream: "ORDERS", Consumer: "billing", Batch: 1, Expires: durationpb.New(time.Second)})
	refusedStarting(t, "Fetch", err, time.Since(began))
	began = time.Now()
	_, err = sc.Publish(ctx, &jetgatev1.PublishRequest{Stream: "ORDERS", Subject: "orders.early", Data: []byte("x")})
	refusedStarting(t, "Publish", err, time.Since(began))
	began = time.Now()
	consume, err := cc.Consume(ctx, &jetgatev1.ConsumeRequest{Stream: "ORDERS", Consumer: "billing", MaxMessages: 1})
	if err == nil {
		_, err = consume.Recv()
	}
	refusedStarting(t, "Consume", err, time.Since(began))

	natstest.StartIn(t, t.TempDir(), w.natsPort)
	select {
	case <-w.started:
	case <-w.ended:
		t.Fatalf("jetgate stopped instead of serving: %v\nlog:\n%s", w.err, w.log)
	case <-time.After(30 * time.Second):
		t.Fatalf("jetgate did not serve within 30s of JetStream starting\nlog:\n%s", w.log)
	}
	if r, err := watch.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Health's Watch once ready: %v, %v; want SERVING on the same stream", r.GetStatus(), err)
	}
	if got := untilHealthAnswers(t, w, conn); got != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Health's Check once ready: %v; want SERVING", got)
	}
	seq := publish(t, sc, "orders.late", "after the wait")
	msgs := fetch(t, cc, "billing", 1, 5*time.Second)
	if len(msgs) != 1 || msgs[0].GetMetadata().GetStreamSeq() != seq {
		t.Fatalf("fetched %v; want the message of seq %d", msgs, seq)
	}
}

// The public gRPC server, made before start-up waits, runs every call
// through the guard and the metrics once ready: on the connection opened
// while it waited, a Fetch without credentials is UNAUTHENTICATED, one with
// a key is served, and /metrics counts both.
func TestY10GRPCGuardAndMetricsOnceReady(t *testing.T) {
	w, conn := runWaitingGRPC(t, func(o *Options) {
		o.ConfigFile = writeConfig(t, fmt.Sprintf(`
nats: {url: %q}
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers: [{stream: ORDERS, name: billing}]
auth:
  api_keys:
    - {principal: billing-svc, sha256: %s}
    - {principal: scraper, sha256: %s}
  grants:
    - {principal: billing-svc, stream: ORDERS, consumers: [billing], actions: [fetch, settle, publish]}
    - {principal: scraper, stream: "*", actions: [metrics]}
`, o.NATSURL, authtest.KeyHash("billing-key"), authtest.KeyHash("scraper-key")))
		o.Given = map[string]bool{"grpc-addr": true, "http-addr": true, "data-dir": true}
	})
	if got := untilHealthAnswers(t, w, conn); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("Health's Check while start-up waits: %v; want NOT_SERVING", got)
	}
	g := grpcCaller{c: jetgatev1.NewConsumerServiceClient(conn)}
	if code, reason, _ := g.fetch(t, "", "billing"); code != codes.Unavailable || reason != "NATS_UNAVAILABLE" {
		t.Fatalf("Fetch without credentials while start-up waits: %v %s; want UNAVAILABLE NATS_UNAVAILABLE, as REST answers", code, reason)
	}

	natstest.StartIn(t, t.TempDir(), w.natsPort)
	select {
	case <-w.started:
	case <-w.ended:
		t.Fatalf("jetgate stopped instead of serving: %v\nlog:\n%s", w.err, w.log)
	case <-time.After(30 * time.Second):
		t.Fatalf("jetgate did not serve within 30s of JetStream starting\nlog:\n%s", w.log)
	}
	if code, reason, _ := g.fetch(t, "", "billing"); code != codes.Unauthenticated {
		t.Fatalf("Fetch without credentials once ready: %v %s; want UNAUTHENTICATED", code, reason)
	}
	if code, reason, _ := g.fetch(t, "billing-key", "billing"); code != codes.OK {
		t.Fatalf("Fetch with a key once ready: %v %s; want OK", code, reason)
	}
	req, err := http.NewRequest(http.MethodGet, w.http+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer scraper-key")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`jetgate_denied_total{reason="UNAUTHENTICATED"} 1`,
		`jetgate_rpc_duration_seconds_count{code="Unauthenticated",method="Fetch"} 1`,
		`jetgate_rpc_duration_seconds_count{code="OK",method="Fetch"} 1`,
		`jetgate_nats_connected 1`,
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("/metrics (%d) lacks %s", resp.StatusCode, want)
		}
	}
}
