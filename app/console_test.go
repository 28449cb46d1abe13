package app

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, url, bearer string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// The console is a static page anyone may load, with a strict CSP and no
// inline script; the listings it calls need credentials and the read grant
// like any caller's: 401 without, 403 without read, 200 with.
func TestConsoleServedWithItsCSP(t *testing.T) {
	p, _, _ := secured(t)
	base := "http://" + p.HTTP
	resp, body := get(t, base+"/console/", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /console/: %s", resp.Status)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("CSP %q allows something unsafe", csp)
	}
	if resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("headers %v: want no CORS and nosniff", resp.Header)
	}
	if regexp.MustCompile(`<script(?:\s+type="module")?\s*>`).MatchString(body) || strings.Contains(body, "style=") {
		t.Errorf("the page has inline script or style:\n%s", body)
	}
	js := regexp.MustCompile(`src="(/console/assets/[^"]+\.js)"`).FindStringSubmatch(body)
	if js == nil {
		t.Fatalf("the page loads no script of its own:\n%s", body)
	}
	if resp, _ := get(t, base+js[1], ""); resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "javascript") {
		t.Errorf("GET %s: %s %s", js[1], resp.Status, resp.Header.Get("Content-Type"))
	}
	if resp, _ := get(t, base+"/console", ""); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/console/" {
		t.Errorf("GET /console: %s to %q, want a redirect to /console/", resp.Status, resp.Header.Get("Location"))
	}

	for _, tt := range []struct {
		bearer string
		want   int
	}{{"", http.StatusUnauthorized}, {"billing-key", http.StatusForbidden}, {"dashboard-key", http.StatusOK}} {
		for _, path := range []string{"/v1/streams", "/v1/streams/ORDERS/consumers", "/v1/streams/ORDERS/consumers/billing/leases"} {
			if resp, body := get(t, base+path, tt.bearer); resp.StatusCode != tt.want {
				t.Errorf("GET %s with %q: %s %s, want %d", path, tt.bearer, resp.Status, body, tt.want)
			}
		}
	}
	if _, body := get(t, base+"/v1/streams/ORDERS/consumers", "dashboard-key"); !strings.Contains(body, `"billing"`) || !strings.Contains(body, `"audit"`) {
		t.Errorf("ListConsumers for dashboard: %s", body)
	}
}

// console: {enabled: false} serves no console.
func TestConsoleDisabled(t *testing.T) {
	file := writeConfig(t, "streams: [{name: ORDERS, subjects: [\"orders.>\"]}]\nconsumers: [{stream: ORDERS, name: billing}]\nconsole: {enabled: false}\n")
	p := start(t, fileOptions(t, file))
	for _, path := range []string{"/console/", "/console", "/console/index.html"} {
		if resp, _ := get(t, "http://"+p.HTTP+path, ""); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %s, want 404", path, resp.Status)
		}
	}
	if resp, body := get(t, "http://"+p.HTTP+"/v1/streams", ""); resp.StatusCode != http.StatusOK || !strings.Contains(body, "ORDERS") {
		t.Errorf("GET /v1/streams: %s %s; the API stays", resp.Status, body)
	}
}
