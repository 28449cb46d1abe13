package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// REST streams a Consume as newline-delimited JSON, one {"result": …} per
// line, flushed as each comes: a heartbeat while idle, then the messages.
func TestRESTConsumeStreamsLineByLine(t *testing.T) {
	a := startApp(t, nil)
	c := newREST(t, a)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+a.HTTP+consumerPath+":consume",
		strings.NewReader(`{"maxMessages":5,"heartbeat":"0.2s"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	lines := make(chan map[string]any)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
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
	next := func() []any {
		t.Helper()
		select {
		case v, ok := <-lines:
			if !ok {
				t.Fatal("the stream ended")
			}
			r, ok := v["result"].(map[string]any)
			if !ok {
				t.Fatalf("line %v has no result", v)
			}
			ms, _ := r["messages"].([]any)
			return ms
		case <-time.After(5 * time.Second):
			t.Fatal("no line within 5s")
		}
		return nil
	}
	if ms := next(); len(ms) != 0 {
		t.Fatalf("first line has %d messages; want a heartbeat", len(ms))
	}
	c.post(publishPath, `{"subject":"orders.new","data":"aGk="}`).ok(t)
	for {
		ms := next()
		if len(ms) == 0 {
			continue // another heartbeat
		}
		tok, _ := ms[0].(map[string]any)["token"].(string)
		noFailures(t, c.post(consumerPath+":ack", map[string]any{"tokens": []string{tok}}), "ack")
		return
	}
}
