package app

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Over TLS, HTTP/1.1 and HTTP/2 alike, a place kept for the probes is
// known under the handshake: a probe is answered there, anything else
// refused.
func TestY2ProbesAreAnsweredOverTLSWithEveryConnectionHeld(t *testing.T) {
	p := newPKI(t)
	file := writeConfig(t, fmt.Sprintf(`
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers: [{stream: ORDERS, name: billing}]
listen: {tls: {cert: %q, key: %q}}
auth: {allow_unauthenticated: true}
limits: {idle_timeout: 1m, max_connections: 1}
`, p.serverCert, p.serverKey))
	proc := start(t, fileOptions(t, file))
	// get is GET path on a connection of its own, kept alive, over
	// HTTP/2 where h2 says so.
	get := func(path string, h2 bool) (*http.Response, string, error) {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.pool, MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: h2}
		t.Cleanup(tr.CloseIdleConnections)
		resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get("https://" + proc.HTTP + path)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b), nil
	}
	if resp, _, err := get("/openapi.json", false); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi.json to hold the one connection: %v %v", resp, err)
	}
	for _, h2 := range []bool{false, true} {
		resp, _, err := get("/healthz", h2)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /healthz (HTTP/2 %v) with max_connections 1 held: %v %v; want 200", h2, resp, err)
		}
		resp, body, err := get("/openapi.json", h2)
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "TOO_MANY_CONNECTIONS") {
			t.Fatalf("GET /openapi.json (HTTP/2 %v) on a place kept for the probes: %v %q %v; want 503 TOO_MANY_CONNECTIONS", h2, resp, body, err)
		}
		if want := map[bool]int{false: 1, true: 2}[h2]; resp.ProtoMajor != want {
			t.Fatalf("answered over %s; want HTTP/%d", resp.Proto, want)
		}
	}
}
