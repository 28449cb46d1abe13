package gateway_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/jetgate/jetgate/internal/replica"
)

// stillServes fails the test unless the process still publishes and fetches:
// the bad request before it left the NATS connection up.
func (c *rest) stillServes(t *testing.T, after string) {
	t.Helper()
	if r := c.get("/readyz"); r.status != http.StatusOK {
		t.Fatalf("after %s: /readyz %d %s", after, r.status, r.raw)
	}
	if r := c.post(publishPath, `{"subject":"orders.ok","data":"AQ=="}`); r.status != http.StatusOK {
		t.Fatalf("after %s: a good publish answered %d %s", after, r.status, r.raw)
	}
	if r := c.post(consumerPath+":fetch", `{"batch":1,"expires":"0s"}`); r.status != http.StatusOK {
		t.Fatalf("after %s: fetch answered %d %s", after, r.status, r.raw)
	}
}

// A subject as long as the server's control line, or a message over its
// max_payload, is refused with a 4xx naming the limit before NATS sees it.
// Sent, the first would close the connection for good.
func TestPublishOverNATSLimitsIsRefusedAndLeavesNATSUp(t *testing.T) {
	c := newREST(t, startApp(t, nil))
	long := func(n int) string { return "orders." + strings.Repeat("x", n-len("orders.")) }
	data := func(n int) string { return base64.StdEncoding.EncodeToString(make([]byte, n)) }
	tests := []struct {
		name   string
		body   string
		reason string
	}{
		{"subject of 4100 bytes", fmt.Sprintf(`{"subject":%q}`, long(4100)), "SUBJECT_TOO_LONG"},
		{"subject of 5000 bytes", fmt.Sprintf(`{"subject":%q}`, long(5000)), "SUBJECT_TOO_LONG"},
		{"subject just over the bound", fmt.Sprintf(`{"subject":%q}`, long(replica.MaxSubjectBytes+1)), "SUBJECT_TOO_LONG"},
		{"data of 1.1 MB", fmt.Sprintf(`{"subject":"orders.big","data":%q}`, data(1_100_000)), "PAYLOAD_TOO_LARGE"},
		{"data of 2.5 MiB", fmt.Sprintf(`{"subject":"orders.big","data":%q}`, data(5<<19)), "PAYLOAD_TOO_LARGE"},
		{"data at the limit with headers over it", fmt.Sprintf(`{"subject":"orders.big","data":%q,"headers":{"X-A":{"values":["v"]}}}`, data(1<<20)), "PAYLOAD_TOO_LARGE"},
		{"msg_id with CR LF", `{"subject":"orders.new","msgId":"a\r\nb"}`, "INVALID_ARGUMENT"},
		{"msg_id over the header bound", fmt.Sprintf(`{"subject":"orders.new","msgId":%q}`, strings.Repeat("i", 70_000)), "HEADERS_TOO_LARGE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.post(publishPath, tt.body)
			if r.status != http.StatusBadRequest || r.reason() != tt.reason {
				t.Fatalf("status %d reason %q (%.300s); want 400 %s", r.status, r.reason(), r.raw, tt.reason)
			}
			c.stillServes(t, tt.name)
		})
	}
	// What is within the limits still goes through.
	for _, body := range []string{
		fmt.Sprintf(`{"subject":%q}`, long(replica.MaxSubjectBytes)),
		fmt.Sprintf(`{"subject":"orders.big","data":%q}`, data(1<<20-64)),
	} {
		if r := c.post(publishPath, body); r.status != http.StatusOK {
			t.Errorf("a publish within the limits answered %d %.300s", r.status, r.raw)
		}
	}
}

func TestRESTMethodAndRouteErrors(t *testing.T) {
	c := newREST(t, startApp(t, nil))
	tests := []struct {
		method, path string
		status       int
		reason       string
		allow        string
	}{
		{"GET", consumerPath + ":fetch", 405, "METHOD_NOT_ALLOWED", "POST"},
		{"PUT", consumerPath + ":ack", 405, "METHOD_NOT_ALLOWED", "POST"},
		{"PUT", consumerPath, 405, "METHOD_NOT_ALLOWED", "DELETE, GET, PATCH, HEAD"},
		{"POST", consumerPath, 405, "METHOD_NOT_ALLOWED", "DELETE, GET, PATCH, HEAD"},
		{"GET", publishPath, 405, "METHOD_NOT_ALLOWED", "POST"},
		{"POST", consumerPath + ":foo", 404, "ROUTE_NOT_FOUND", ""},
		{"POST", "/v1/streams/ORDERS:foo", 404, "ROUTE_NOT_FOUND", ""},
		{"POST", "/v1/nothing", 404, "ROUTE_NOT_FOUND", ""},
		{"PUT", "/v1/streams/ORDERS/consumers", 405, "METHOD_NOT_ALLOWED", "GET, POST, HEAD"},
		{"GET", "/v1/streams/ORDERS/consumers/billing/nothing", 404, "ROUTE_NOT_FOUND", ""},
		{"GET", "/v2/streams/ORDERS/consumers/billing", 404, "ROUTE_NOT_FOUND", ""},
		// A name with a colon that is no verb is still a consumer's name.
		{"GET", "/v1/streams/ORDERS/consumers/billing:foo", 404, "CONSUMER_NOT_FOUND", ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			r := c.request(tt.method, tt.path, `{}`, "application/json")
			if r.status != tt.status || r.reason() != tt.reason {
				t.Fatalf("status %d reason %q (%s); want %d %s", r.status, r.reason(), r.raw, tt.status, tt.reason)
			}
			if got := r.header.Get("Allow"); got != tt.allow {
				t.Errorf("Allow %q; want %q", got, tt.allow)
			}
			if msg, _ := r.body["message"].(string); msg == "" {
				t.Errorf("no message: %s", r.raw)
			}
		})
	}
}

// A body that does not decode is 400 MALFORMED_BODY with a sentence that
// says where and what, not a library's bare text.
func TestRESTMalformedBodiesSayWhereAndWhat(t *testing.T) {
	c := newREST(t, startApp(t, nil))
	tests := []struct {
		name, path, body string
		want             []string // in the message
	}{
		{"cut short", consumerPath + ":fetch", `{"batch":`, []string{"FetchRequest", "line 1:10", "ends before"}},
		{"an array", consumerPath + ":fetch", `[]`, []string{"FetchRequest", "line 1:1", "["}},
		{"null", consumerPath + ":ack", `null`, []string{"AckRequest", "line 1:1", "null"}},
		{"a wrong type", consumerPath + ":fetch", `{"batch":"x"}`, []string{"line 1:10", "batch"}},
		{"an unknown field", consumerPath + ":fetch", "{\n  \"bogus\": 1\n}", []string{"line 2:3", `"bogus"`}},
		{"two objects", consumerPath + ":fetch", `{"batch":1}{}`, []string{"line 1:12"}},
		{"a bad duration", publishPath, `{"subject":"orders.x","data":"!!"}`, []string{"PublishRequest", "data"}},
		{"a stream body", consumerPath + ":consume", `{"maxMessages":"x"}`, []string{"ConsumeRequest", "maxMessages"}},
		// What the API's JSON takes, where a body is most often written
		// otherwise.
		{"data not base64", publishPath, `{"subject":"orders.x","data":"hello world"}`, []string{"data", `bytes are base64: "aGVsbG8=" is "hello"`}},
		{"a header as a string", publishPath, `{"subject":"orders.x","headers":{"X-A":"b"}}`, []string{`headers map each name to {"values": [...]}`}},
		{"a header as a list", publishPath, "{\"subject\":\"orders.x\",\n \"headers\":{\"X-A\":[\"b\"]}}", []string{`headers map each name to {"values": [...]}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.post(tt.path, tt.body)
			if r.status != http.StatusBadRequest || r.reason() != "MALFORMED_BODY" {
				t.Fatalf("status %d reason %q (%s); want 400 MALFORMED_BODY", r.status, r.reason(), r.raw)
			}
			msg, _ := r.body["message"].(string)
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not say %q", msg, w)
				}
			}
			if strings.Contains(msg, "proto:") {
				t.Errorf("message %q passes on the library's prefix", msg)
			}
		})
	}
}

func TestRESTRefusesCharsetsOtherThanUTF8(t *testing.T) {
	c := newREST(t, startApp(t, nil))
	for _, ct := range []string{"application/json; charset=utf-16", "application/json; charset=latin1", "application/json; charset=UTF-32LE"} {
		if r := c.request("POST", publishPath, `{"subject":"orders.x"}`, ct); r.status != http.StatusUnsupportedMediaType || r.reason() != "UNSUPPORTED_MEDIA_TYPE" {
			t.Errorf("%s: status %d reason %q; want 415", ct, r.status, r.reason())
		}
	}
	if r := c.request("POST", publishPath, `{"subject":"orders.x"}`, "application/json; charset=UTF-8"); r.status != http.StatusOK {
		t.Errorf("charset=UTF-8: status %d %s; want 200", r.status, r.raw)
	}
}

// A query parameter that is not of its field's type is a 400 with a
// reason, naming the parameter as sent and its value, in no Go words (a
// reviewer saw `strconv.ParseInt: parsing "abc": invalid syntax` and no
// reason); two values for one field are a 400 with a reason too.
func TestABadQueryParameterIsNamedWithAReason(t *testing.T) {
	c := newREST(t, startApp(t, nil))
	for _, q := range []string{"pageSize=abc", "page_size=99999999999", "pageSize=1.5"} {
		r := c.get(consumerPath + "/deadLetters?" + q)
		name, value, _ := strings.Cut(q, "=")
		msg, _ := r.body["message"].(string)
		if r.status != http.StatusBadRequest || r.reason() != "INVALID_ARGUMENT" {
			t.Errorf("?%s: status %d reason %q (%s); want 400 INVALID_ARGUMENT", q, r.status, r.reason(), r.raw)
		}
		if !strings.Contains(msg, name) || !strings.Contains(msg, value) || strings.Contains(msg, "strconv") {
			t.Errorf("?%s: message %q; want it to name %s and %s, in no Go words", q, msg, name, value)
		}
	}
	r := c.get(consumerPath + "/deadLetters?pageSize=1&page_size=2")
	if r.status != http.StatusBadRequest || r.reason() != "INVALID_ARGUMENT" {
		t.Errorf("two values of page_size: status %d reason %q (%s); want 400 INVALID_ARGUMENT", r.status, r.reason(), r.raw)
	}
	c.stillServes(t, "bad query parameters")
}

// A query parameter a route does not take is a 400 naming it and what the
// route takes, not ignored: a caller who put a field in the query
// (":fetch?batch=5") got one message, the default, without a word. The
// routes' own names and their proto names are taken.
func TestAQueryParameterARouteDoesNotTakeIsRefused(t *testing.T) {
	c := newREST(t, startApp(t, nil))
	c.post(publishPath, `{"subject":"orders.q","data":"AQ=="}`)
	tests := []struct {
		method, path, want string
	}{
		{"POST", consumerPath + ":fetch?batch=5", "takes none"},
		{"GET", consumerPath + "?verbose=1", "takes none"},
		{"DELETE", consumerPath + "?force=true", "takes none"},
		{"GET", "/v1/streams?pageSize=10", "takes none"},
		{"GET", consumerPath + "/deadLetters?pageSize=5&limit=5", "takes only pageSize, pageToken"},
		{"GET", consumerPath + "/deadLetters?=5", "takes only"},
	}
	for _, tt := range tests {
		body := ""
		if tt.method == "POST" {
			body = `{"batch":1,"expires":"0s"}`
		}
		r := c.request(tt.method, tt.path, body, "application/json")
		msg, _ := r.body["message"].(string)
		if r.status != http.StatusBadRequest || r.reason() != "INVALID_ARGUMENT" {
			t.Errorf("%s %s: status %d reason %q (%s); want 400 INVALID_ARGUMENT", tt.method, tt.path, r.status, r.reason(), r.raw)
		}
		if !strings.Contains(msg, tt.want) {
			t.Errorf("%s %s: message %q; want it to say %q", tt.method, tt.path, msg, tt.want)
		}
	}
	// What a route takes, by either name, passes (to a consumer without a
	// dead letter: FAILED_PRECONDITION, NO_DEAD_LETTER), and the gateway's
	// own pages take anything.
	for _, path := range []string{consumerPath + "/deadLetters?pageSize=5", consumerPath + "/deadLetters?page_size=5&pageToken="} {
		if r := c.get(path); r.reason() != "NO_DEAD_LETTER" {
			t.Errorf("GET %s: status %d (%s); want NO_DEAD_LETTER", path, r.status, r.raw)
		}
	}
	for _, path := range []string{"/metrics?x=1", "/healthz?probe=1"} {
		resp, err := http.Get(c.base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: status %d; want 200", path, resp.StatusCode)
		}
	}
	// Nothing was fetched by the refused call: the message is still there.
	if r := c.post(consumerPath+":fetch", `{"batch":5,"expires":"0s"}`); r.status != http.StatusOK || len(r.body["messages"].([]any)) != 1 {
		t.Errorf("fetch after the refusals: %d %s; want the one message", r.status, r.raw)
	}
}
