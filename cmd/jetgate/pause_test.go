package main

import (
	"strings"
	"testing"
)

// A pause_until in the past pauses nothing: check-config refuses it, naming
// it; a future one passes.
func TestCheckConfigRefusesAPastPause(t *testing.T) {
	text := "streams: [{name: ORDERS, subjects: [orders.>]}]\nconsumers:\n  - stream: ORDERS\n    name: billing\n    pause_until: %s\n"
	file := writeConfig(t, strings.Replace(text, "%s", "2020-01-01T00:00:00Z", 1))
	code, stdout, stderr := checkConfigRun([]string{"--config", file}, envOf())
	want := "jetgate check-config: " + file + ":5: consumers[0].pause_until: 2020-01-01T00:00:00Z is in the past"
	if code != 2 || stdout != "" || !strings.HasPrefix(stderr, want) {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, stdout, stderr, want)
	}
	file = writeConfig(t, strings.Replace(text, "%s", "2999-01-01T00:00:00Z", 1))
	if code, _, stderr := checkConfigRun([]string{"--config", file}, envOf()); code != 0 {
		t.Errorf("a future pause: exit %d, %s", code, stderr)
	}
}
