package gateway

import (
	"testing"

	"github.com/jetgate/jetgate/api"
)

// A request's route is the OpenAPI document's template, whatever the names
// in its path: a span named by it has as many names as the API has routes.
func TestARequestsRouteIsItsTemplate(t *testing.T) {
	rt, err := loadRoutes(api.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, want string }{
		{"POST", "/v1/streams/ORDERS/consumers/billing:fetch", "/v1/streams/{stream}/consumers/{consumer}:fetch"},
		{"POST", "/v1/streams/EVENTS/consumers/audit:ack", "/v1/streams/{stream}/consumers/{consumer}:ack"},
		{"GET", "/v1/streams/ORDERS/consumers/billing", "/v1/streams/{stream}/consumers/{consumer}"},
		{"HEAD", "/v1/streams/ORDERS/consumers/billing", "/v1/streams/{stream}/consumers/{consumer}"},
		{"GET", "/v1/streams/ORDERS/consumers/billing/deadLetters", "/v1/streams/{stream}/consumers/{consumer}/deadLetters"},
		{"POST", "/v1/streams/ORDERS:publish", "/v1/streams/{stream}:publish"},
		{"GET", "/v1/streams/ORDERS/consumers/billing:fetch", ""}, // no GET there
		{"POST", "/v1/streams/ORDERS/consumers/billing:nosuchverb", ""},
		{"GET", "/v1/nothing/here", ""},
		{"GET", "/healthz", ""},
	} {
		if got := rt.template(c.path, c.method); got != c.want {
			t.Errorf("%s %s: route %q; want %q", c.method, c.path, got, c.want)
		}
	}
}
