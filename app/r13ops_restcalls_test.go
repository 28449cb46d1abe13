package app

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// send makes one REST request and returns its status.
func send(t *testing.T, method, url, contentType, body string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// A REST call the gateway refuses before it reaches the services (a body
// that is not the request's JSON, a Content-Type that is not JSON, a query
// parameter that does not parse) is a call of its method that failed
// InvalidArgument, in jetgate_rpc_duration_seconds as a gRPC one is: the
// dashboard's "Calls by method and code" shows "gRPC and REST alike". They
// were in no series: a client that sent every call wrong was invisible.
// A call the services refused is counted once, not again here.
func TestRESTCallsRefusedBeforeTheServicesAreCounted(t *testing.T) {
	p := start(t, testOptions(t))
	base := "http://" + p.HTTP + "/v1/streams/ORDERS"
	for _, c := range []struct {
		method, path, contentType, body string
		want                            int
	}{
		{"POST", "/consumers/billing:fetch", "application/json", `{"maxMessages":1}`, 400},
		{"POST", ":publish", "text/plain", `{"subject":"orders.1"}`, 415},
		{"GET", "/consumers/billing/deadLetters?pageSize=abc", "", "", 400},
		{"POST", "/consumers/billing:fetch", "application/json", `{"batch":100000}`, 400}, // the services refuse it
	} {
		if got := send(t, c.method, base+c.path, c.contentType, c.body); got != c.want {
			t.Fatalf("%s %s: %d; want %d", c.method, c.path, got, c.want)
		}
	}
	body := scrape(t, "http://"+p.HTTP+"/metrics")
	for _, want := range []string{
		`jetgate_rpc_duration_seconds_count{code="InvalidArgument",method="Fetch"} 2`,
		`jetgate_rpc_duration_seconds_count{code="InvalidArgument",method="Publish"} 1`,
		`jetgate_rpc_duration_seconds_count{code="InvalidArgument",method="ListDeadLetters"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
