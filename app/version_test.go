package app

import (
	"encoding/json"
	"log/slog"
	"runtime"
	"strings"
	"testing"
)

// first is the first line of the log.
func (b *syncBuffer) first() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	line, _, _ := strings.Cut(b.buf.String(), "\n")
	return line
}

// The version is in the log's first line and in /metrics.
func TestVersionInTheFirstLogLineAndMetrics(t *testing.T) {
	var logs syncBuffer
	o := testOptions(t)
	o.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	p := start(t, o)
	first := logs.first()
	var rec map[string]any
	if err := json.Unmarshal([]byte(first), &rec); err != nil || rec["msg"] != "jetgate starting" || rec["version"] != Version() || rec["go"] != runtime.Version() {
		t.Errorf("first log line %s; want jetgate starting with version %s", first, Version())
	}
	want := `jetgate_build_info{go_version="` + runtime.Version() + `",version="` + Version() + `"} 1`
	if body := scrape(t, "http://"+p.HTTP+"/metrics"); !strings.Contains(body, want) {
		t.Errorf("/metrics lacks %s", want)
	}
	if Version() == "" {
		t.Error("no version")
	}
}
