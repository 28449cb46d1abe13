package app

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A REST Consume over HTTP/2 lives through heartbeats longer than the write
// stall (limits: a heartbeat of up to 5m, a stall of 30s by default). The
// stall was a write deadline left set between writes, and HTTP/2, unlike
// HTTP/1.1, resets a stream whose write deadline passes whether a write
// waits or not: an idle stream of heartbeat 45s was reset INTERNAL_ERROR
// 30s after its last line, before its first heartbeat, and so every 30s
// after each reconnect (HTTP/1.1 kept it). The stall now bounds each write
// alone.
func TestARESTConsumeOverHTTP2OutlivesItsStallBetweenHeartbeats(t *testing.T) {
	p := newPKI(t)
	o := fileOptions(t, writeConfig(t, fmt.Sprintf(`
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers: [{stream: ORDERS, name: billing}]
listen: {tls: {cert: %q, key: %q}}
`, p.serverCert, p.serverKey)))
	o.ConsumeWriteStall = 500 * time.Millisecond
	proc := start(t, o)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.pool}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	base := "https://" + proc.HTTP + "/v1/streams/ORDERS"

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/consumers/billing:consume", strings.NewReader(`{"maxMessages":5,"heartbeat":"1s"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		t.Fatalf("%s %d; want HTTP/2 200", resp.Proto, resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	beats := 0
	for beats < 3 && sc.Scan() { // each heartbeat comes twice the stall after the last line
		var line struct {
			Result *struct {
				Messages []json.RawMessage `json:"messages"`
			} `json:"result"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil || line.Result == nil {
			t.Fatalf("line %s (%v); want a result", sc.Bytes(), err)
		}
		if len(line.Result.Messages) > 0 {
			t.Fatalf("line %s; want heartbeats alone", sc.Bytes())
		}
		beats++
	}
	if beats < 3 {
		t.Fatalf("the stream ended after %d heartbeats: %v", beats, sc.Err())
	}
}
