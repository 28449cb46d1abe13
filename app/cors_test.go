package app

import (
	"net/http"
	"strings"
	"testing"
)

// A page of an allowed origin may call every method of the API, a
// consumer's PATCH and DELETE (DESIGN section 18) included; another
// origin's preflight is refused and a call of it carries no CORS header.
func TestCORSPreflightAllowsEveryMethodOfTheAPI(t *testing.T) {
	o := fileOptions(t, writeConfig(t, `listen: {cors_origins: ["https://app.example.com"]}
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers: [{stream: ORDERS, name: billing}]
`))
	p := start(t, o)
	preflight := func(origin, method string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctxT(t), http.MethodOptions, "http://"+p.HTTP+"/v1/streams/ORDERS/consumers/billing", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", method)
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, traceparent")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete} {
		resp := preflight("https://app.example.com", method)
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
			t.Fatalf("preflight of %s: %s %v", method, resp.Status, resp.Header)
		}
		if !headerLists(resp.Header.Get("Access-Control-Allow-Methods"), method) {
			t.Errorf("preflight of %s: Access-Control-Allow-Methods %q", method, resp.Header.Get("Access-Control-Allow-Methods"))
		}
		for _, h := range []string{"Authorization", "Content-Type", "traceparent"} {
			if !headerLists(resp.Header.Get("Access-Control-Allow-Headers"), h) {
				t.Errorf("Access-Control-Allow-Headers %q lacks %s", resp.Header.Get("Access-Control-Allow-Headers"), h)
			}
		}
	}
	if resp := preflight("https://evil.example.com", http.MethodDelete); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight of another origin: %s %v; want 403 without CORS headers", resp.Status, resp.Header)
	}
}

// headerLists reports whether a comma-separated header value lists v.
func headerLists(list, v string) bool {
	for _, f := range strings.Split(list, ",") {
		if strings.EqualFold(strings.TrimSpace(f), v) {
			return true
		}
	}
	return false
}
