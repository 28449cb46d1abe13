package gateway_test

import (
	"net/http"
	"strings"
	"testing"
)

// A query parameter given twice is named as the caller sent it, with what
// was sent, as a parameter of the wrong type is. grpc-gateway's words named
// the proto field (`too many values for field "page_size": 1, 2`) to a
// caller who wrote pageSize, without saying it was the query.
func TestARepeatedQueryParameterIsNamedAsSent(t *testing.T) {
	c := newREST(t, startApp(t, nil))
	for q, want := range map[string]string{
		"pageSize=1&pageSize=2":   `query parameter pageSize: give it once, not 2 times ("1", "2")`,
		"page_size=1&page_size=3": `query parameter page_size: give it once, not 2 times ("1", "3")`,
	} {
		r := c.get(consumerPath + "/deadLetters?" + q)
		msg, _ := r.body["message"].(string)
		if r.status != http.StatusBadRequest || r.reason() != "INVALID_ARGUMENT" || msg != want {
			t.Errorf("?%s: status %d reason %q message %q; want 400 INVALID_ARGUMENT %q", q, r.status, r.reason(), msg, want)
		}
	}
	r := c.get(consumerPath + "/deadLetters?pageSize=1&page_size=2")
	if msg, _ := r.body["message"].(string); r.status != http.StatusBadRequest || !strings.HasPrefix(msg, "query parameter ") {
		t.Errorf("both spellings: status %d message %q; want 400 naming the query parameter", r.status, msg)
	}
}
