package app

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// Without authentication, on loopback (the default), the REST listener
// takes requests that name a loopback host alone. A web page whose name an
// attacker points at 127.0.0.1 (DNS rebinding) is the gateway's own origin
// to the browser, and its requests name the page's host: they used to
// list, publish and fetch. With authentication on, or beyond loopback
// (allow_unauthenticated), the Host is the operator's business.
func TestWithoutAuthOnlyALoopbackHostIsServed(t *testing.T) {
	p := start(t, testOptions(t))
	port := p.HTTP[strings.LastIndex(p.HTTP, ":"):]
	call := func(host, method, path, body string) int {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+p.HTTP+path, bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, host := range []string{"attacker.example" + port, "attacker.example", "127.0.0.1.attacker.example" + port, "10.0.0.1" + port} {
		for _, c := range []struct{ method, path, body string }{
			{"GET", "/v1/streams", ""},
			{"POST", "/v1/streams/ORDERS:publish", `{"subject":"orders.x","data":"eA=="}`},
			{"POST", "/v1/streams/ORDERS/consumers/billing:fetch", `{"expires":"1s"}`},
			{"GET", "/metrics", ""},
		} {
			if got := call(host, c.method, c.path, c.body); got != http.StatusForbidden {
				t.Errorf("%s %s as host %q: %d; want 403", c.method, c.path, host, got)
			}
		}
	}
	for _, host := range []string{"localhost" + port, "127.0.0.1" + port, "LOCALHOST", "app.localhost" + port, "127.0.0.2" + port, "[::1]" + port} {
		if got := call(host, "GET", "/v1/streams", ""); got != http.StatusOK {
			t.Errorf("GET /v1/streams as host %q: %d; want 200", host, got)
		}
	}
}
