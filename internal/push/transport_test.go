package push_test

import (
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/push"
)

// endpoint is a receiver that also counts the connections it accepted and
// the HTTP versions it was spoken to in.
type endpoint struct {
	*receiver
	conns  atomic.Int64
	mu     sync.Mutex
	protos map[string]int
}

// newEndpoint starts a receiver speaking HTTP/1.1 and h2c, or, with tlsOn,
// HTTP/1.1 and h2 over TLS (h2 only if offerH2).
func newEndpoint(t *testing.T, tlsOn, offerH2 bool) *endpoint {
	ep := &endpoint{receiver: &receiver{got: make(chan pushed, 10000)}, protos: map[string]int{}}
	ep.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ep.mu.Lock()
		ep.protos[r.Proto]++
		ep.mu.Unlock()
		ep.serve(w, r)
	}))
	// A connection counts once it carries a request: one whose TLS
	// handshake failed carried none.
	var seen sync.Map
	ep.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if _, again := seen.LoadOrStore(c, true); s == http.StateActive && !again {
			ep.conns.Add(1)
		} else if s != http.StateActive && !again {
			seen.Delete(c)
		}
	}
	ep.Config.Protocols = new(http.Protocols)
	ep.Config.Protocols.SetHTTP1(true)
	if tlsOn {
		ep.TLS = &tls.Config{NextProtos: []string{"http/1.1"}}
		if offerH2 {
			ep.Config.Protocols.SetHTTP2(true)
			ep.TLS.NextProtos = []string{"h2", "http/1.1"}
		}
		ep.StartTLS()
	} else {
		ep.Config.Protocols.SetUnencryptedHTTP2(true)
		ep.Start()
	}
	t.Cleanup(ep.Close)
	return ep
}

func (ep *endpoint) spokenIn() map[string]int {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	out := map[string]int{}
	for k, v := range ep.protos {
		out[k] = v
	}
	return out
}

// caFile writes the TLS endpoint's certificate for push.tls.ca.
func (ep *endpoint) caFile(t *testing.T) string {
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ep.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return ca
}

// received is how many requests the endpoint has had.
func (ep *endpoint) received() int {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	n := 0
	for _, v := range ep.protos {
		n += v
	}
	return n
}

// publishN publishes n messages and waits until ep has had a request for
// each and the consumer has drained. The server counts a stored message as
// pending only once its consumers are signalled, after the publish is
// acknowledged: a consumer that looks drained may not have its messages yet.
func (e *env) publishN(ep *endpoint, n int) {
	e.t.Helper()
	for i := range n {
		e.publish("orders.new", strconv.Itoa(i), nil)
	}
	natstest.Eventually(e.t, 20*time.Second, strconv.Itoa(n)+" requests at the endpoint", func() bool { return ep.received() >= n })
	e.drained(20 * time.Second)
}

// The HTTP version to an endpoint: HTTP/1.1 over http unless http2 says
// h2c; h2 over https wherever the endpoint's TLS offers it, HTTP/1.1
// where it does not; http2 over https requires h2.
func TestTheHTTPVersionSpokenToTheEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name           string
		tlsOn, offerH2 bool
		http2          bool
		want           string
	}{
		{"http: HTTP/1.1", false, false, false, "HTTP/1.1"},
		{"http with http2: h2c", false, false, true, "HTTP/2.0"},
		{"https offering h2: h2", true, true, false, "HTTP/2.0"},
		{"https without h2: HTTP/1.1", true, false, false, "HTTP/1.1"},
		{"https with http2: h2", true, true, true, "HTTP/2.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ep := newEndpoint(t, tc.tlsOn, tc.offerH2)
			pc := push.Config{URL: ep.URL, HTTP2: tc.http2, Concurrency: 4}
			if tc.tlsOn {
				pc.TLSCA = ep.caFile(t)
			}
			e.replica(consumerCfg(), pc)
			e.publishN(ep, 20)
			if got := ep.spokenIn(); got[tc.want] < 20 || len(got) != 1 {
				t.Fatalf("requests by version %v; want 20 or more, all %s", got, tc.want)
			}
			if n := ep.conns.Load(); n > 4 {
				t.Fatalf("%d connections at concurrency 4", n)
			}
		})
	}
}

// http2 to an https endpoint that offers no h2 fails every request (a
// retryable failure) rather than falling back to HTTP/1.1 unasked.
func TestHTTP2IsRequiredWhenConfiguredOverTLS(t *testing.T) {
	e := newEnv(t)
	ep := newEndpoint(t, true, false)
	r, _ := e.replica(consumerCfg(), push.Config{URL: ep.URL, HTTP2: true, TLSCA: ep.caFile(t), RetryMin: 50 * time.Millisecond})
	e.publish("orders.new", "x", nil)
	natstest.Eventually(t, 5*time.Second, "a failure", func() bool { return pushState(t, r).LastError != "" })
	if got := ep.spokenIn(); len(got) != 0 {
		t.Fatalf("requests by version %v; want none", got)
	}
	if ci := e.info(); ci.NumAckPending != 1 {
		t.Fatalf("%d messages held; want the one, its lease kept", ci.NumAckPending)
	}
}

// Connections are kept for reuse: however many messages, no more are
// opened than pushes can be in flight at once.
func TestConnectionsAreReusedUpToTheConcurrency(t *testing.T) {
	e := newEnv(t)
	ep := newEndpoint(t, false, false)
	const concurrency = 4
	e.replica(consumerCfg(), push.Config{URL: ep.URL, Concurrency: concurrency})
	e.publishN(ep, 300)
	if n := ep.conns.Load(); n > concurrency {
		t.Fatalf("%d connections for 300 pushes at concurrency %d", n, concurrency)
	}
}

// Requests built from the pusher's template in parallel are each their
// own: every header names its own message, and every signature (from
// pooled HMAC states) verifies.
func TestRequestsInParallelAreEachTheirOwn(t *testing.T) {
	e := newEnv(t)
	ep := newEndpoint(t, false, false)
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	e.replica(consumerCfg(), push.Config{URL: ep.URL, Concurrency: 8, SigningSecretFile: writeFile(t, secret),
		BearerTokenFile: writeFile(t, "tok")})
	v, err := push.NewVerifier(writeFile(t, secret))
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
	for i := range n {
		e.publish("orders.new", "m"+strconv.Itoa(i), nil)
	}
	seen := map[uint64]bool{}
	for range n {
		p := ep.next(t, 10*time.Second)
		seq := seqHeader(p)
		if err := v.Verify(p.header, p.body, time.Now()); err != nil {
			t.Fatalf("seq %d: %v", seq, err)
		}
		if p.header.Get("Webhook-Id") != fmt.Sprintf("%s.%d", stream, seq) || string(p.body) != "m"+strconv.FormatUint(seq-1, 10) {
			t.Fatalf("seq %d: Webhook-Id %q, body %q", seq, p.header.Get("Webhook-Id"), p.body)
		}
		if p.header.Get("Authorization") != "Bearer tok" || p.header.Get("User-Agent") != "jetgate-push" ||
			p.header.Get("Content-Type") != "application/octet-stream" || len(p.header.Values("Jetgate-Stream")) != 1 {
			t.Fatalf("seq %d: header %v", seq, p.header)
		}
		seen[seq] = true
	}
	if len(seen) != n {
		t.Fatalf("%d messages seen; want %d", len(seen), n)
	}
}

// A request's limit is its context's deadline: an endpoint that does not
// answer within it is a timeout.
func TestAnEndpointSilentPastTheTimeoutIsATimeout(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	r, _ := e.replica(consumerCfg(), push.Config{URL: srv.URL, Timeout: 200 * time.Millisecond, RetryMin: time.Second})
	e.publish("orders.new", "x", nil)
	natstest.Eventually(t, 5*time.Second, "a timeout", func() bool { return strings.HasPrefix(pushState(t, r).LastError, "timeout") })
}
