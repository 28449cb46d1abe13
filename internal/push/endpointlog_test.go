package push

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The endpoint going down and coming back are WARNs, each outage once, and
// a flapping endpoint at most once a minute, counting what it left out.
func TestEndpointDownAndBackAreLoggedRateLimited(t *testing.T) {
	var buf bytes.Buffer
	gauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "up"})
	e := newEndpointLog(slog.New(slog.NewTextHandler(&buf, nil)), gauge)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e.now = func() time.Time { return now }
	lines := func() []string {
		s := strings.Split(strings.TrimSpace(buf.String()), "\n")
		buf.Reset()
		if s[0] == "" {
			return nil
		}
		return s
	}
	step := func(d time.Duration) { now = now.Add(d) }

	e.wentDown("connection refused")
	e.wentDown("connection refused") // still down: nothing more
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], "level=WARN") || !strings.Contains(got[0], "push endpoint down") ||
		!strings.Contains(got[0], `error="connection refused"`) {
		t.Fatalf("down: %q", got)
	}
	if v := testutil.ToFloat64(gauge); v != 0 {
		t.Errorf("gauge %v while down", v)
	}
	step(3 * time.Second)
	e.answered()
	e.answered()
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], "push endpoint back") || !strings.Contains(got[0], "down_for=3s") {
		t.Fatalf("back: %q", got)
	}
	if v := testutil.ToFloat64(gauge); v != 1 {
		t.Errorf("gauge %v while up", v)
	}
	// Two more outages within the minute: neither logged, nor their ends.
	for range 2 {
		step(time.Second)
		e.wentDown("HTTP 503")
		step(time.Second)
		e.answered()
	}
	if got := lines(); len(got) != 0 {
		t.Fatalf("within the minute: %q", got)
	}
	step(time.Minute)
	e.wentDown("HTTP 503")
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], "outages_not_logged=2") {
		t.Fatalf("after the minute: %q", got)
	}
}
