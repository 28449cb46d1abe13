package app

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// limitedConfig is a gateway of one consumer with small listener limits.
func limitedConfig(t *testing.T) *Process {
	t.Helper()
	file := writeConfig(t, `
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers: [{stream: ORDERS, name: billing}]
auth: {allow_unauthenticated: true}
limits: {idle_timeout: 1s, max_connections: 3}
`)
	return start(t, fileOptions(t, file))
}

// closedWithin reports whether the server closes c within d, reading and
// dropping what it sends first (a GOAWAY).
func closedWithin(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// dialPreface opens a raw connection to the gRPC listener and sends what
// an HTTP/2 client sends first: the preface and its settings.
func dialPreface(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")); err != nil {
		t.Fatal(err)
	}
	return c
}

// An idle gRPC connection is closed after limits.idle_timeout, and each
// listener holds at most limits.max_connections for callers: the next
// takes a place kept for the probes, which holds it briefly, on gRPC and
// HTTP alike (TestY2PlacesKeptForProbesAreBounded: past those places, one
// is closed as it is accepted).
func TestListenersCloseIdleConnectionsAndCapThem(t *testing.T) {
	p := limitedConfig(t)
	idle := dialPreface(t, p.GRPC)
	if !closedWithin(idle, 10*time.Second) {
		t.Fatal("an idle gRPC connection was not closed within 10s of a 1s idle_timeout")
	}
	// One that never finishes its handshake (it sends nothing) is closed
	// as soon, on both listeners: it holds a slot of max_connections.
	for _, addr := range []string{p.GRPC, p.HTTP} {
		silent, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = silent.Close() })
		if !closedWithin(silent, 10*time.Second) {
			t.Fatalf("%s: a connection that sends nothing was not closed within 10s", addr)
		}
	}
	// Three connections each hold a Consume stream open, which no
	// idle_timeout ends; a fourth takes a place kept for the probes, which
	// holds it keptLife at the most (HTTP's closes it at its first request,
	// no probe's).
	for _, addr := range []string{p.GRPC, p.HTTP} {
		var release []func()
		for range 3 {
			release = append(release, holdConsume(t, p, addr))
		}
		extra := dialPreface(t, addr)
		if !closedWithin(extra, 10*time.Second) {
			t.Fatalf("%s: a fourth connection with max_connections 3 was not closed", addr)
		}
		for _, r := range release {
			r()
		}
	}
	// Slots come back as connections close. The server may not have seen
	// the held ones close yet, so its first answer may be a refusal: the
	// call waits for the client's next try (CI saw 50 fail-fast calls
	// spent within one reconnect backoff).
	cc, _ := grpcClients(t, p.GRPC)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := cc.GetConsumer(ctx, nil, grpc.WaitForReady(true))
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("a call once the held connections closed: %v; want it served (INVALID_ARGUMENT for an empty request)", err)
	}
}

// holdConsume opens a connection of its own to the listener at addr (gRPC
// or HTTP) and a Consume stream on it, open once its headers came; release
// ends both.
func holdConsume(t *testing.T, p *Process, addr string) (release func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if addr == p.GRPC {
		conn := grpcConn(t, addr)
		st, err := jetgatev1.NewConsumerServiceClient(conn).Consume(ctx, &jetgatev1.ConsumeRequest{Stream: "ORDERS", Consumer: "billing"})
		if err == nil {
			_, err = st.Header()
		}
		if err != nil {
			t.Fatalf("a Consume to hold a gRPC connection: %v", err)
		}
		return func() { cancel(); _ = conn.Close() }
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/streams/ORDERS/consumers/billing:consume", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a Consume to hold an HTTP connection: %v %v", resp, err)
	}
	return func() { cancel(); resp.Body.Close(); tr.CloseIdleConnections() }
}

// tryScrape is the body of GET url, and false where it could not be read
// (a listener at max_connections refuses the connection).
func tryScrape(url string) (string, bool) {
	resp, err := http.Get(url)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err == nil && resp.StatusCode == http.StatusOK
}

// 1 MiB of gRPC headers is refused before any handler: the open Health
// service too. Health's Watch streams are bounded per connection.
func TestGRPCHeadersAndHealthWatchesAreBounded(t *testing.T) {
	p := start(t, testOptions(t))
	conn, err := grpc.NewClient(p.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	h := healthpb.NewHealthClient(conn)
	big := metadata.AppendToOutgoingContext(ctxT(t), "x-big", strings.Repeat("a", 1<<20))
	if _, err := h.Check(big, &healthpb.HealthCheckRequest{}); err == nil {
		t.Fatal("a Health check with 1 MiB of headers was served")
	}
	if r, err := h.Check(ctxT(t), &healthpb.HealthCheckRequest{}); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("a plain Health check after: %v %v", r, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range healthWatchesPerConn {
		w, err := h.Watch(ctx, &healthpb.HealthCheckRequest{})
		if err == nil {
			_, err = w.Recv()
		}
		if err != nil {
			t.Fatalf("watch %d: %v", i, err)
		}
	}
	w, err := h.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err == nil {
		_, err = w.Recv()
	}
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("watch %d on one connection: %v; want RESOURCE_EXHAUSTED", healthWatchesPerConn+1, err)
	}
}

// HTTP's bound on a request's headers is at most the README's 64 KiB, as
// gRPC's is, whatever net/http reads past its own (a reviewer's finding: 66
// KiB were served), on a kept-alive connection too.
func TestHTTPHeadersAreBoundTo64KiB(t *testing.T) {
	p := start(t, testOptions(t))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	for _, c := range []struct{ size, want int }{
		{32 << 10, http.StatusOK}, {48 << 10, http.StatusOK}, {64 << 10, http.StatusRequestHeaderFieldsTooLarge},
		{32 << 10, http.StatusOK}, {66 << 10, http.StatusRequestHeaderFieldsTooLarge},
	} {
		size, want := c.size, c.want
		req, _ := http.NewRequest(http.MethodGet, "http://"+p.HTTP+"/healthz", nil)
		req.Header.Set("X-Pad", strings.Repeat("p", size))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET /healthz with a %d KiB header: %d, want %d", size>>10, resp.StatusCode, want)
		}
	}
}

// A connection that trickles a request's headers is closed once
// idle_timeout (1s here) passes without them, not after HTTP's own 5s: the
// 5s is a ceiling. (A server that waited 5s could not close it within 4s.)
func TestHTTPHeadersAreBoundByIdleTimeout(t *testing.T) {
	p := limitedConfig(t)
	c, err := net.Dial("tcp", p.HTTP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Write([]byte("POST /v1/streams/ORDERS/consumers/billing:ack HTTP/1.1\r\nHost: localhost\r\n")); err != nil {
		t.Fatal(err)
	}
	if !closedWithin(c, 4*time.Second) {
		t.Fatal("a connection whose headers never ended was held past 4s with idle_timeout 1s")
	}
}
