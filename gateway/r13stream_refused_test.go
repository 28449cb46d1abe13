package gateway_test

import (
	"bytes"
	"net/http"
	"testing"
)

// A REST Consume refused before its stream opens answers its error as every
// other REST call does: google.rpc.Status's JSON, {"code", "message",
// "details"}, with its ErrorInfo reason. It answered {"error": {...}} and a
// newline, the form of an error that ends an open stream: a caller reading
// a refusal as the API's other refusals (its own MALFORMED_BODY among them,
// and Fetch's 404 for the same consumer) found no code, message or reason.
func TestARESTConsumeRefusedAnswersAsEveryOtherCall(t *testing.T) {
	a := startApp(t, nil)
	c := newREST(t, a)
	for _, tc := range []struct {
		what, path, body string
		status           int
		reason           string
	}{
		{"a consumer not served", "/v1/streams/ORDERS/consumers/nobody:consume", `{"maxMessages":5}`, http.StatusNotFound, "CONSUMER_NOT_FOUND"},
		{"a negative maxMessages", consumerPath + ":consume", `{"maxMessages":-1}`, http.StatusBadRequest, "INVALID_ARGUMENT"},
		{"a heartbeat too short", consumerPath + ":consume", `{"heartbeat":"1ms"}`, http.StatusBadRequest, "INVALID_ARGUMENT"},
		{"a body that is not one", consumerPath + ":consume", `{"maxMessages":"x"}`, http.StatusBadRequest, "MALFORMED_BODY"},
	} {
		r := c.post(tc.path, tc.body)
		if r.status != tc.status || r.reason() != tc.reason || r.body["message"] == nil || r.body["code"] == nil {
			t.Errorf("%s: %d %s; want %d with a top-level code, message and reason %s", tc.what, r.status, r.raw, tc.status, tc.reason)
		}
		if bytes.HasSuffix(r.raw, []byte("\n")) {
			t.Errorf("%s: the refusal ends in a stream's delimiter: %q", tc.what, r.raw)
		}
	}
	fetch := c.post("/v1/streams/ORDERS/consumers/nobody:fetch", `{}`)
	consume := c.post("/v1/streams/ORDERS/consumers/nobody:consume", `{}`)
	if !bytes.Equal(fetch.raw, consume.raw) {
		t.Errorf("Fetch and Consume of a consumer not served answer apart:\n fetch   %s\n consume %s", fetch.raw, consume.raw)
	}
}
