package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/jetgate/jetgate/app"
)

// A body over the limit is 413 BODY_TOO_LARGE and says which setting sets
// the limit, as a batch over limits.max_batch does ("the gateway's
// limits.max_batch, --max-batch"): it said only "the request body is larger
// than 1024 bytes", and a caller whose publish was refused could not tell
// its operator what to raise.
func TestATooLargeBodyNamesTheLimitsSetting(t *testing.T) {
	c := newREST(t, startApp(t, func(o *app.Options) { o.MaxBodyBytes = 1024 }))
	r := c.post(publishPath, `{"subject":"orders.x","data":"`+strings.Repeat("A", 2000)+`"}`)
	msg, _ := r.body["message"].(string)
	if r.status != http.StatusRequestEntityTooLarge || r.reason() != "BODY_TOO_LARGE" || !strings.Contains(msg, "limits.max_body_bytes") || !strings.Contains(msg, "--max-body-bytes") {
		t.Errorf("status %d reason %q message %q; want 413 BODY_TOO_LARGE naming limits.max_body_bytes and --max-body-bytes", r.status, r.reason(), msg)
	}
}
