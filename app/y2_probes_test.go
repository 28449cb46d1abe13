package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/authtest"
	"github.com/jetgate/jetgate/internal/natstest"
)

// The chart's probes call /healthz and /readyz on the HTTP listener, which
// held limits.max_connections for callers and probes alike: that many idle
// keep-alive connections (an unauthenticated client's where auth is off,
// or simply a full pool of callers) made every probe's connection close as
// it was accepted, and Kubernetes restart the pod. A few places beyond
// max_connections are kept for the probes: on one, a probe is answered and
// the connection closed; anything else is refused 503, credentials or not,
// so the limit stays a limit for callers.
func TestY2ProbesAreAnsweredWithEveryConnectionHeld(t *testing.T) {
	file := writeConfig(t, fmt.Sprintf(`
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers: [{stream: ORDERS, name: billing}]
auth:
  api_keys: [{principal: svc, sha256: %s}]
  grants: [{principal: svc, stream: ORDERS, consumers: [billing], actions: [read]}]
limits: {idle_timeout: 1m, max_connections: 3}
`, authtest.KeyHash("svc-key")))
	p := start(t, fileOptions(t, file))
	var held []net.Conn
	for range 3 {
		held = append(held, keepAlive(t, p.HTTP, "svc-key"))
	}

	for _, path := range []string{"/healthz", "/readyz"} {
		a := y2Get(t, p.HTTP, path, "")
		if a.err != nil || a.code != http.StatusOK {
			t.Fatalf("GET %s with max_connections 3 held by 3 idle keep-alive connections: %d %v; want 200", path, a.code, a.err)
		}
		if !a.closed {
			t.Errorf("GET %s on a place kept for the probes: the connection stayed open; want it closed", path)
		}
	}
	// A caller's request on a kept place is refused, authenticated or not,
	// and its connection closed.
	for _, bearer := range []string{"svc-key", ""} {
		a := y2Get(t, p.HTTP, "/v1/streams/ORDERS/consumers/billing", bearer)
		if a.err != nil || a.code != http.StatusServiceUnavailable || !strings.Contains(a.body, "TOO_MANY_CONNECTIONS") {
			t.Fatalf("GetConsumer (bearer %q) on a place kept for the probes: %d %q %v; want 503 TOO_MANY_CONNECTIONS", bearer, a.code, a.body, a.err)
		}
		if !a.closed {
			t.Errorf("GetConsumer (bearer %q) refused on a kept place: the connection stayed open", bearer)
		}
	}
	// A place of max_connections freed, a caller is served again.
	_ = held[0].Close()
	var last y2Answer
	ok := false
	for deadline := time.Now().Add(10 * time.Second); !ok && time.Now().Before(deadline); {
		last = y2Get(t, p.HTTP, "/v1/streams/ORDERS/consumers/billing", "svc-key")
		ok = last.err == nil && last.code == http.StatusOK
	}
	if !ok {
		t.Fatalf("GetConsumer once a held connection closed: %d %q %v; want 200", last.code, last.body, last.err)
	}
}

// gRPC's listener keeps places for its probes (a Kubernetes grpc probe, a
// load balancer's health check) as HTTP's does: Health's Check is answered
// there, and any other call is refused, credentials or not.
func TestY2GRPCHealthChecksAreAnsweredWithEveryConnectionHeld(t *testing.T) {
	file := writeConfig(t, fmt.Sprintf(`
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers: [{stream: ORDERS, name: billing}]
auth:
  api_keys: [{principal: svc, sha256: %s}]
  grants: [{principal: svc, stream: ORDERS, consumers: [billing], actions: [read]}]
limits: {idle_timeout: 1m, max_connections: 3}
`, authtest.KeyHash("svc-key")))
	p := start(t, fileOptions(t, file))
	withKey := func() context.Context {
		ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer svc-key"), 5*time.Second)
		t.Cleanup(cancel)
		return ctx
	}
	getConsumer := func(conn *grpc.ClientConn) error {
		_, err := jetgatev1.NewConsumerServiceClient(conn).GetConsumer(withKey(), &jetgatev1.GetConsumerRequest{Stream: "ORDERS", Consumer: "billing"})
		return err
	}
	for i := range 3 {
		if err := getConsumer(grpcConn(t, p.GRPC)); err != nil {
			t.Fatalf("GetConsumer %d to hold a connection: %v", i, err)
		}
	}

	conn := grpcConn(t, p.GRPC)
	resp, err := healthpb.NewHealthClient(conn).Check(ctxT(t), &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Health Check with max_connections 3 held by 3 idle connections: %v %v; want SERVING", resp, err)
	}
	// The caller's calls on it are refused, the guard's credentials or not.
	if err := getConsumer(conn); status.Code(err) != codes.Unavailable || y2Reason(err) != "TOO_MANY_CONNECTIONS" {
		t.Fatalf("GetConsumer with credentials on a place kept for the probes: %v; want UNAVAILABLE TOO_MANY_CONNECTIONS", err)
	}
	w, err := healthpb.NewHealthClient(conn).Watch(ctxT(t), &healthpb.HealthCheckRequest{})
	if err == nil {
		_, err = w.Recv()
	}
	if y2Reason(err) != "TOO_MANY_CONNECTIONS" {
		t.Fatalf("Health Watch on a place kept for the probes: %v; want TOO_MANY_CONNECTIONS", err)
	}
	// And the place is given back within keptLife.
	natstest.Eventually(t, 3*keptLife, "the kept connection closed", func() bool {
		return conn.GetState() != connectivity.Ready
	})
}

// y2Reason is the ErrorInfo reason of a gRPC error, "" if none.
func y2Reason(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

// The places kept for the probes are few: with them taken too, the next
// connection is closed as it is accepted, and counted, on either listener.
func TestY2PlacesKeptForProbesAreBounded(t *testing.T) {
	file := writeConfig(t, `
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers: [{stream: ORDERS, name: billing}]
auth: {allow_unauthenticated: true}
limits: {idle_timeout: 1m, max_connections: 1}
`)
	p := start(t, fileOptions(t, file))
	for _, l := range []struct{ name, addr string }{{"http", p.HTTP}, {"grpc", p.GRPC}} {
		// Silent connections hold a place each until the headers' bound
		// (5s here) or keptLife; the one after them finds none.
		var held []net.Conn
		for range 1 + probePlaces {
			c, err := net.Dial("tcp", l.addr)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		extra, err := net.Dial("tcp", l.addr)
		if err != nil {
			t.Fatal(err)
		}
		// Closed as it was accepted, not at the 5s bound a place would
		// give it.
		if !closedWithin(extra, 3*time.Second) {
			t.Fatalf("%s: a connection past max_connections and the places kept for probes was not closed within 3s", l.name)
		}
		_ = extra.Close()
		for _, c := range held {
			_ = c.Close()
		}
		// The scrape's own connection may be refused while the server
		// has not yet seen the others close: at least one refusal, then.
		refused := regexp.MustCompile(`jetgate_connections_refused_total\{listener="` + l.name + `"\} ([0-9]+)\n`)
		var body string
		natstest.Eventually(t, 10*time.Second, "a scrape once the connections closed", func() bool {
			var ok bool
			body, ok = tryScrape("http://" + p.HTTP + "/metrics")
			return ok
		})
		if m := refused.FindStringSubmatch(body); m == nil || m[1] == "0" {
			t.Fatalf("%s: the refusal was not counted: %v in\n%s", l.name, m, body)
		}
	}
}

// keepAlive opens a connection to addr, sends GetConsumer on it (with
// bearer, if any), reads its answer and leaves it open: an idle keep-alive
// connection, closed at the end of the test.
func keepAlive(t *testing.T, addr, bearer string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, y2Request(addr, "/v1/streams/ORDERS/consumers/billing", bearer)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("GetConsumer to hold a connection: %d (closing %v); want 200, kept alive", resp.StatusCode, resp.Close)
	}
	_ = c.SetDeadline(time.Time{})
	return c
}

func y2Request(addr, path, bearer string) string {
	auth := ""
	if bearer != "" {
		auth = "Authorization: Bearer " + bearer + "\r\n"
	}
	return fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", path, addr, auth)
}

// y2Answer is what a GET on a connection of its own came back with, and
// whether the gateway then closed the connection.
type y2Answer struct {
	code   int
	body   string
	closed bool
	err    error
}

// y2Get sends GET path on a new keep-alive connection to addr, as the
// kubelet's probe does (but asking to keep it), within 5s.
func y2Get(t *testing.T, addr, path, bearer string) y2Answer {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return y2Answer{err: err}
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, y2Request(addr, path, bearer)); err != nil {
		return y2Answer{err: err}
	}
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return y2Answer{err: err}
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	// Closed: the next read ends at once, not at the deadline.
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = r.ReadByte()
	var ne net.Error
	return y2Answer{code: resp.StatusCode, body: string(b), closed: err != nil && !(errors.As(err, &ne) && ne.Timeout())}
}
