package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jetgate/jetgate/app"
)

// restConsume opens a REST Consume of body and returns its lines, each a
// JSON object, until the stream or the test ends.
func restConsume(t *testing.T, a app.Addrs, body string) <-chan map[string]any {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+a.HTTP+consumerPath+":consume", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	lines := make(chan map[string]any)
	go func() {
		defer resp.Body.Close()
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<20), 64<<20)
		for sc.Scan() {
			var v map[string]any
			if json.Unmarshal(sc.Bytes(), &v) == nil {
				select {
				case lines <- v:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return lines
}

// nextLine is the messages of the next line of lines (none: a heartbeat).
func nextLine(t *testing.T, lines <-chan map[string]any) []any {
	t.Helper()
	select {
	case v, ok := <-lines:
		if !ok {
			t.Fatal("the stream ended")
		}
		r, ok := v["result"].(map[string]any)
		if !ok {
			t.Fatalf("line %.300v has no result", v)
		}
		ms, _ := r["messages"].([]any)
		return ms
	case <-time.After(10 * time.Second):
		t.Fatal("no line within 10s")
	}
	return nil
}

// REST streams a Consume as newline-delimited JSON, one {"result": …} per
// line, flushed as each comes: a heartbeat while idle, then the messages.
func TestRESTConsumeStreamsLineByLine(t *testing.T) {
	a := startApp(t, nil)
	c := newREST(t, a)
	lines := restConsume(t, a, `{"maxMessages":5,"heartbeat":"0.2s"}`)
	if ms := nextLine(t, lines); len(ms) != 0 {
		t.Fatalf("first line has %d messages; want a heartbeat", len(ms))
	}
	c.post(publishPath, `{"subject":"orders.new","data":"aGk="}`).ok(t)
	for {
		ms := nextLine(t, lines)
		if len(ms) == 0 {
			continue // another heartbeat
		}
		tok, _ := ms[0].(map[string]any)["token"].(string)
		noFailures(t, c.post(consumerPath+":ack", map[string]any{"tokens": []string{tok}}), "ack")
		return
	}
}

// A gateway whose limits.max_fetch_bytes is raised over a default gRPC
// client's 4 MiB streams its larger bursts over REST as it returns them to
// a Fetch: the REST side's own connection to its backend refused them
// (ResourceExhausted), the stream ended and its leases were nak'ed, a
// delivery burnt each round.
func TestRESTConsumeOfARaisedMaxFetchBytes(t *testing.T) {
	a := startApp(t, func(o *app.Options) { o.MaxFetchBytes = 8 << 20 })
	js := jetStream(t, a)
	data := make([]byte, 100_000)
	for range 60 {
		if _, err := js.Publish(t.Context(), "orders.mid", data); err != nil {
			t.Fatal(err)
		}
	}
	lines := restConsume(t, a, `{"maxMessages":100,"heartbeat":"1s"}`)
	for got := 0; got < 60; {
		for _, m := range nextLine(t, lines) {
			md, _ := m.(map[string]any)["metadata"].(map[string]any)
			if n, _ := md["numDelivered"].(string); n != "1" {
				t.Fatalf("a message delivered again: %v", md)
			}
			got++
		}
	}
}

// A REST caller with a long job extends its message by the time the job
// takes (README), and is not silent meanwhile: its stream ended after the
// silence (1s here), its lease nak'ed while it still worked on it.
func TestRESTConsumeOfACallerThatExtendedByADurationIsNotSilent(t *testing.T) {
	a := startApp(t, func(o *app.Options) { o.ConsumeWriteStall = time.Second })
	c := newREST(t, a)
	lines := restConsume(t, a, `{"maxMessages":5,"heartbeat":"0.2s","autoExtend":true}`)
	c.post(publishPath, `{"subject":"orders.new","data":"aGk="}`).ok(t)
	var ms []any
	for len(ms) == 0 {
		ms = nextLine(t, lines)
	}
	tok, _ := ms[0].(map[string]any)["token"].(string)
	noFailures(t, c.post(consumerPath+":extend", map[string]any{"tokens": []string{tok}, "duration": "20s"}), "extend")
	for range 15 { // 3s of heartbeats: three silences
		if ms := nextLine(t, lines); len(ms) != 0 {
			t.Fatalf("the stream sent %d messages; want heartbeats", len(ms))
		}
	}
	noFailures(t, c.post(consumerPath+":ack", map[string]any{"tokens": []string{tok}}), "ack after the job")
}

// A REST Consume answers its status and headers as soon as its stream is
// open: a caller whose HTTP client waits for the headers (most do, with a
// timeout) waited for the first message or heartbeat, 15s by default.
func TestRESTConsumeAnswersItsHeadersOnceOpen(t *testing.T) {
	a := startApp(t, nil)
	c := newREST(t, a)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // the heartbeat is 5m
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+a.HTTP+consumerPath+":consume", strings.NewReader(`{"maxMessages":5,"heartbeat":"300s"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("no headers before the first line: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q; want 200, application/json", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	c.post(publishPath, `{"subject":"orders.new","data":"aGk="}`).ok(t)
	line, err := bufio.NewReader(resp.Body).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Result struct {
			Messages []struct{ Token string }
		}
	}
	if err := json.Unmarshal(line, &v); err != nil || len(v.Result.Messages) != 1 {
		t.Fatalf("first line %s (%v); want the message", line, err)
	}
	noFailures(t, c.post(consumerPath+":ack", map[string]any{"tokens": []string{v.Result.Messages[0].Token}}), "ack")
}

// A Consume refused before its stream opens still answers its own status.
func TestRESTConsumeRefusedAnswersItsStatus(t *testing.T) {
	a := startApp(t, nil)
	c := newREST(t, a)
	r := c.post("/v1/streams/ORDERS/consumers/nobody:consume", `{"maxMessages":5}`)
	if r.status != http.StatusNotFound {
		t.Fatalf("status %d, body %s; want 404", r.status, r.raw)
	}
}
