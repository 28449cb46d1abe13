package gateway_test

import (
	"net/http"
	"testing"
)

// An empty path segment is no route, a GET with a verb the API does not
// have is not passed on as a name with a colon (but a name is), and a body
// of whitespace alone means the request's defaults.
func TestRESTEmptySegmentsVerbsAndBlankBodies(t *testing.T) {
	c := newREST(t, startApp(t, nil))
	for _, path := range []string{"/v1/streams//consumers/billing", "/v1/streams/ORDERS/consumers//", "/v1/streams/ORDERS//billing:fetch"} {
		if r := c.request("GET", path, "", "application/json"); r.status != http.StatusNotFound || r.reason() != "ROUTE_NOT_FOUND" {
			t.Errorf("GET %s: %d %s; want 404 ROUTE_NOT_FOUND", path, r.status, r.raw)
		}
	}
	if r := c.request("POST", "/v1/streams//consumers/billing:fetch", `{}`, "application/json"); r.status != http.StatusNotFound {
		t.Errorf("POST with an empty stream: %d %s; want 404", r.status, r.raw)
	}
	for _, body := range []string{" ", "\n\t \r\n"} {
		r := c.request("POST", consumerPath+":fetch", body, "application/json")
		if r.status != http.StatusOK {
			t.Errorf("a body of whitespace %q: %d %s; want the defaults", body, r.status, r.raw)
		}
	}
}
