package app

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/authtest"
)

// README, "Listener limits": the limits hold "for callers not yet
// authenticated as much as for the rest", "so that silent connections do
// not hold the slots". The open Health service's Watch streams need no
// credentials and do not make a connection busy: a reviewer held every slot
// of max_connections with three, and no authenticated caller got in, for
// good (gRPC's MaxConnectionIdle counts any stream in flight).
func TestHealthWatchesOfCallersWithoutCredentialsHoldNoSlot(t *testing.T) {
	file := writeConfig(t, fmt.Sprintf(`
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers: [{stream: ORDERS, name: billing}]
auth:
  api_keys: [{principal: svc, sha256: %s}]
  grants: [{principal: svc, stream: ORDERS, consumers: [billing], actions: [read]}]
limits: {idle_timeout: 1s, max_connections: 3}
`, authtest.KeyHash("svc-key")))
	p := start(t, fileOptions(t, file))

	// Three anonymous callers, one Watch each, on connections of their own.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 3 {
		conn, err := grpc.NewClient(p.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		w, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
		if err == nil {
			_, err = w.Recv()
		}
		if err != nil {
			t.Fatalf("anonymous watch %d: %v", i, err)
		}
	}

	// An authenticated caller, on a fresh connection each try, for 8s
	// (eight idle_timeouts): it should get in once the anonymous
	// connections are closed as the limits promise.
	deadline := time.Now().Add(8 * time.Second)
	var lastErr error
	for time.Now().Before(deadline) {
		conn, err := grpc.NewClient(p.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		cctx, ccancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer svc-key"), time.Second)
		_, lastErr = jetgatev1.NewConsumerServiceClient(conn).GetConsumer(cctx, &jetgatev1.GetConsumerRequest{Stream: "ORDERS", Consumer: "billing"})
		ccancel()
		_ = conn.Close()
		if lastErr == nil {
			return
		}
	}
	t.Fatalf("an authenticated caller was refused for 8s (idle_timeout 1s) while 3 anonymous Health watches held max_connections 3: last %v (%v)",
		lastErr, status.Code(lastErr))
}

// Calls the guard refuses do not keep a connection busy either: a caller
// without credentials whose call is refused every 100ms has its connection
// closed once idle_timeout passes, as a silent one does.
func TestRefusedCallsKeepNoConnectionOpen(t *testing.T) {
	file := writeConfig(t, fmt.Sprintf(`
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers: [{stream: ORDERS, name: billing}]
auth:
  api_keys: [{principal: svc, sha256: %s}]
  grants: [{principal: svc, stream: ORDERS, consumers: [billing], actions: [read]}]
limits: {idle_timeout: 1s}
`, authtest.KeyHash("svc-key")))
	p := start(t, fileOptions(t, file))
	var dials atomic.Int32
	conn, err := grpc.NewClient(p.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			dials.Add(1)
			return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cc := jetgatev1.NewConsumerServiceClient(conn)
	deadline := time.Now().Add(20 * time.Second)
	for dials.Load() < 2 && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := cc.GetConsumer(ctx, &jetgatev1.GetConsumerRequest{Stream: "ORDERS", Consumer: "billing"})
		cancel()
		if c := status.Code(err); c != codes.Unauthenticated && c != codes.Unavailable {
			t.Fatalf("a call without credentials: %v; want UNAUTHENTICATED", err)
		}
		time.Sleep(100 * time.Millisecond) // the caller's pace, not a wait for the gateway
	}
	if dials.Load() < 2 {
		t.Fatal("a connection whose every call was refused was still open 20s on (idle_timeout 1s)")
	}
}
