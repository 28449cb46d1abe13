package app

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/authtest"
)

// README, "Listener limits": they hold "for callers not yet authenticated as
// much as for the rest". On gRPC a connection whose every call is refused
// is closed (TestRefusedCallsKeepNoConnectionOpen). On REST, a keep-alive
// connection that sent a request refused 401 every 100ms was never closed
// (each request restarted idle_timeout): max_connections such connections,
// without any credential, locked every caller out of the listener for as
// long as they kept at it. A refused request's connection is closed with
// its answer.
func TestRefusedRESTRequestsKeepNoConnectionOpen(t *testing.T) {
	file := writeConfig(t, fmt.Sprintf(`
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers: [{stream: ORDERS, name: billing}]
auth:
  api_keys: [{principal: svc, sha256: %s}]
  grants: [{principal: svc, stream: ORDERS, consumers: [billing], actions: [read]}]
limits: {idle_timeout: 1s}
`, authtest.KeyHash("svc-key")))
	p := start(t, fileOptions(t, file))
	if n, closed := keptOpen(t, p.HTTP, "wrong", http.StatusUnauthorized, 20*time.Second); !closed {
		t.Fatalf("a connection whose every request was refused 401 was still open 20s on, %d requests (idle_timeout 1s)", n)
	}
	// An authenticated caller's connection is kept alive as before.
	if n, closed := keptOpen(t, p.HTTP, "svc-key", http.StatusOK, 3*time.Second); closed {
		t.Fatalf("an authenticated caller's keep-alive connection was closed after %d requests", n)
	}
}

// keptOpen sends GetConsumer with bearer every 100ms on one keep-alive
// connection for d, each answered want, and says how many it sent and
// whether the gateway closed the connection meanwhile.
func keptOpen(t *testing.T, addr, bearer string, want int, d time.Duration) (int, bool) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	n := 0
	for deadline := time.Now().Add(d); time.Now().Before(deadline); n++ {
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := fmt.Fprintf(conn, "GET /v1/streams/ORDERS/consumers/billing HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", addr, bearer); err != nil {
			return n, true
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			return n, true
		}
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("request %d with %q: %d; want %d", n, bearer, resp.StatusCode, want)
		}
		time.Sleep(100 * time.Millisecond) // the caller's pace, not a wait for the gateway
	}
	return n, false
}
