package gateway_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Every Duration field of every request takes Go's form ("500ms", "1m",
// "1h30m") as well as protobuf's ("0.5s"), nested ones and the streaming
// Consume's included, as the configuration file does.
func TestRESTTakesDurationsInGosFormToo(t *testing.T) {
	a := startApp(t, nil)
	c := newREST(t, a)
	c.post(publishPath, `{"subject":"orders.new","data":"aGk=","ttl":"1h30m"}`).ok(t)
	c.post(publishPath+"Batch", `{"messages":[{"subject":"orders.a","data":"YQ=="},{"subject":"orders.b","data":"Yg==","ttl":"1m"}]}`).ok(t)
	r := c.post(consumerPath+":fetch", "{\"batch\": 3,\n \"expires\" :\t\"500ms\"}").ok(t)
	msgs := list(t, r.body["messages"], "messages")
	if len(msgs) != 3 {
		t.Fatalf("fetched %d messages; want 3", len(msgs))
	}
	toks := tokensOf(t, msgs)
	noFailures(t, c.post(consumerPath+":nak", map[string]any{"tokens": toks[:1], "delay": "1m"}), "nak")
	noFailures(t, c.post(consumerPath+":nak", map[string]any{"tokens": toks[1:2], "delay": "0.25s"}), "nak")
	noFailures(t, c.post(consumerPath+":ack", map[string]any{"tokens": toks[2:]}), "ack")

	// An expires of 500ms is half a second, not five: the empty Fetch ends
	// well before its default.
	start := time.Now()
	r = c.post(consumerPath+":fetch", `{"batch":1,"expires":"300ms","group":""}`).ok(t)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("a Fetch with expires 300ms took %v", took)
	}

	// The stream's heartbeat too.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+a.HTTP+consumerPath+":consume",
		strings.NewReader(`{"maxMessages":5,"heartbeat":"200ms"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("consume with heartbeat 200ms: status %d", resp.StatusCode)
	}
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.Contains(line, `"result"`) {
		t.Fatalf("consume's first line %q (%v); want a heartbeat", line, err)
	}
}

// A Duration in neither form is 400 MALFORMED_BODY naming the field, with
// both forms shown.
func TestRESTBadDurationNamesTheFieldAndBothForms(t *testing.T) {
	c := newREST(t, startApp(t, nil))
	tests := []struct{ name, path, body, field string }{
		{"fetch", consumerPath + ":fetch", `{"expires":"5 seconds"}`, "expires"},
		{"nak", consumerPath + ":nak", `{"tokens":["x"],"delay":"1mn"}`, "delay"},
		{"consume", consumerPath + ":consume", `{"heartbeat":"soon"}`, "heartbeat"},
		{"publish", publishPath, `{"subject":"orders.x","ttl":"1d"}`, "ttl"},
		{"a nested one", publishPath + "Batch", `{"messages":[{"subject":"orders.a"},{"subject":"orders.b","ttl":"2x"}]}`, "messages[1].ttl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.post(tt.path, tt.body)
			if r.status != http.StatusBadRequest || r.reason() != "MALFORMED_BODY" {
				t.Fatalf("status %d reason %q (%s); want 400 MALFORMED_BODY", r.status, r.reason(), r.raw)
			}
			msg, _ := r.body["message"].(string)
			for _, w := range []string{tt.field + ": ", `"0.5s"`, `"500ms"`, `"1h30m"`} {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not say %q", msg, w)
				}
			}
		})
	}
}

// The OpenAPI document says so of every request Duration.
func TestOpenAPIDurationsShowBothForms(t *testing.T) {
	r := newREST(t, startApp(t, nil)).get("/openapi.json").ok(t)
	n := strings.Count(string(r.raw), `In JSON, protobuf's form (\"0.5s\") or Go's (\"500ms\", \"1m\", \"1h30m\").`)
	if n != 5 { // Fetch expires, Nak delay, Consume heartbeat, Publish ttl, a batch message's ttl
		t.Errorf("%d Duration fields say both forms; want 5", n)
	}
}
