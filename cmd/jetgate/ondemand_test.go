package main

import (
	"strings"
	"testing"
)

// check-config takes a file that serves on demand alone, from the file or
// from --on-demand (JETGATE_ON_DEMAND), and prints the block; one with
// nothing to serve is refused, saying on_demand is a way to serve.
func TestCheckConfigOnDemandAlone(t *testing.T) {
	block := "on_demand:\n  match:\n    - stream: ORDERS\n      consumer: team-*\n  idle_unbind: 10m\n"
	file := writeConfig(t, "streams: [{name: ORDERS, subjects: [orders.>]}]\non_demand: {match: [{stream: ORDERS, consumer: team-*}]}\n")
	empty := writeConfig(t, "streams: [{name: ORDERS, subjects: [orders.>]}]\n")
	for _, tt := range []struct {
		name string
		args []string
		env  []string
	}{
		{"the file", []string{"--config", file}, nil},
		{"the flag", []string{"--config", empty, "--on-demand", "ORDERS/team-*"}, nil},
		{"the environment", []string{"--config", empty}, []string{"JETGATE_ON_DEMAND", "ORDERS/team-*"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := checkConfigRun(tt.args, envOf(tt.env...))
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q; want 0 and nothing", code, stderr)
			}
			if !strings.Contains(stdout, block) || !strings.Contains(stdout, "consumers: []\n") {
				t.Errorf("output lacks %q and no consumers:\n%s", block, stdout)
			}
		})
	}
	code, _, stderr := checkConfigRun([]string{"--config", empty}, envOf())
	if code != 2 || !strings.Contains(stderr, "serve existing consumers with on_demand (--on-demand STREAM/CONSUMER), or let callers make them (admin)") {
		t.Errorf("nothing to serve: exit %d, stderr %q; want 2 and on_demand named", code, stderr)
	}
	code, _, stderr = checkConfigRun([]string{"--config", empty, "--on-demand", "ORDERS"}, envOf())
	if want := `jetgate check-config: --on-demand: "ORDERS": give STREAM/CONSUMER`; code != 2 || !strings.HasPrefix(stderr, want) {
		t.Errorf("a bad --on-demand: exit %d, stderr %q; want 2 and %q", code, stderr, want)
	}
}
