package main

import (
	"strings"
	"testing"
)

// DESIGN 13's and the README's on_demand block, copied as it is, is checked
// without a warning: `{stream: "*"}` is documented as every stream but
// jetgate's own, and it printed three warnings (one per stream of jetgate's)
// at every check-config and start. A narrower pattern that matches one of
// jetgate's own streams (KV_*) is likely a mistake: one warning, naming them.
func TestCheckConfigTakesTheDocumentedOnDemandBlockQuietly(t *testing.T) {
	documented := writeConfig(t, `on_demand:
  match:                                  # glob patterns; unset: no consumer on demand
    - {stream: ORDERS, consumer: "team-*"}
    - {stream: "*", consumer: "*"}
  idle_unbind: 10m                        # unbind one nobody called for this long (holding nothing)
`)
	code, _, stderr := checkConfigRun([]string{"--config", documented}, envOf())
	if code != 0 || stderr != "" {
		t.Errorf("the documented block: exit %d, stderr %q; want 0 and nothing", code, stderr)
	}
	narrow := writeConfig(t, "on_demand:\n  match:\n    - {stream: \"KV_*\", consumer: \"*\"}\n")
	code, _, stderr = checkConfigRun([]string{"--config", narrow}, envOf())
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if code != 0 || len(lines) != 1 || !strings.Contains(lines[0], ":3: on_demand.match[0].stream") ||
		!strings.Contains(lines[0], "KV_jetgate_settles") || !strings.Contains(lines[0], "KV_jetgate_members") {
		t.Errorf("KV_*: exit %d, stderr %q; want one warning at line 3 naming both KV streams", code, stderr)
	}
}

// `idle_unbind: 0s` was taken, and check-config printed the block without
// it, while the gateway unbound after the default 10m: neither what the
// file says (a reader may take 0s for "never") nor what runs. It is refused
// as 1ms is, saying to leave it out for the default.
func TestCheckConfigRefusesAZeroIdleUnbind(t *testing.T) {
	file := writeConfig(t, "on_demand:\n  match: [{stream: ORDERS, consumer: \"*\"}]\n  idle_unbind: 0s\n")
	code, stdout, stderr := checkConfigRun([]string{"--config", file}, envOf())
	want := file + `:3: on_demand.idle_unbind: 0s: must be at least 1s (leave it out for the default, 10m0s)`
	if code != 2 || stdout != "" || strings.TrimSpace(stderr) != "jetgate check-config: "+want {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, stdout, stderr, want)
	}
}
