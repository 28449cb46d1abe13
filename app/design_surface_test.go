package app

import (
	"context"
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

// A REST Consume stream's response carried grpc-gateway's forwarding of the
// backend's own header, `Grpc-Metadata-Content-Type: application/grpc`: the
// REST caller sees the gateway's inner gRPC hop, which no unary answer shows
// and DESIGN 8 gives REST no reason to (identity and trace context are the
// only headers that cross).
func TestAConsumeStreamShowsNoGRPCHeaders(t *testing.T) {
	p := start(t, testOptions(t))
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+p.HTTP+"/v1/streams/ORDERS/consumers/billing:consume", strings.NewReader(`{"heartbeat":"1s"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for name := range resp.Header {
		if strings.HasPrefix(strings.ToLower(name), "grpc-") {
			t.Errorf("the stream's response has %s: %q", name, resp.Header.Values(name))
		}
	}
}
