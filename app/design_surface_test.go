package app

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// A path the gateway serves only when a setting turns it on answers, when
// it is off, as every path the API does not have does: 404 with the
// ErrorInfo reason ROUTE_NOT_FOUND, saying which setting turned it off. A
// turned-off /metrics answered grpc-gateway's bare {"code":5,"message":"Not
// Found","details":[]}, with no reason, and a turned-off console "no API
// call is at GET /console/" (a new user's walk through DESIGN 8 and 16).
func TestTurnedOffPathsSayTheyAreOff(t *testing.T) {
	file := writeConfig(t, "streams: [{name: ORDERS, subjects: [\"orders.>\"]}]\nconsumers: [{stream: ORDERS, name: billing}]\n"+
		"listen: {metrics: false}\nconsole: {enabled: false}\n")
	p := start(t, fileOptions(t, file))
	for _, tt := range []struct{ path, setting string }{
		{"/metrics", "listen.metrics"},
		{"/console", "console.enabled"},
		{"/console/", "console.enabled"},
		{"/console/index.html", "console.enabled"},
	} {
		resp, body := get(t, "http://"+p.HTTP+tt.path, "")
		var st struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Details []struct {
				Reason string `json:"reason"`
			} `json:"details"`
		}
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Errorf("GET %s: %s %q: %v", tt.path, resp.Status, body, err)
			continue
		}
		if resp.StatusCode != http.StatusNotFound || st.Code != 5 || len(st.Details) != 1 || st.Details[0].Reason != "ROUTE_NOT_FOUND" {
			t.Errorf("GET %s: %s %s; want 404, code 5, reason ROUTE_NOT_FOUND", tt.path, resp.Status, body)
		}
		if !strings.Contains(st.Message, tt.setting) {
			t.Errorf("GET %s: %q does not name %s, the setting that turned it off", tt.path, st.Message, tt.setting)
		}
	}
	// The API stays.
	if resp, body := get(t, "http://"+p.HTTP+"/v1/streams", ""); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/streams: %s %s", resp.Status, body)
	}
}
