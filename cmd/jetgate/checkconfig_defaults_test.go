package main

import (
	"strings"
	"testing"
)

// check-config prints the effective configuration "defaults filled in"
// (README): listen.metrics and listen.reflection, on unless set to false,
// were left out unless the file or a flag named them, so its reader could
// not tell whether /metrics and gRPC reflection are served.
func TestCheckConfigPrintsMetricsAndReflection(t *testing.T) {
	file := writeConfig(t, "streams: [{name: ORDERS, subjects: [orders.>]}]\nconsumers: [{stream: ORDERS, name: billing}]\n")
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"--config", file}, []string{"  metrics: true\n", "  reflection: true\n"}},
		{[]string{"--config", file, "--metrics=false"}, []string{"  metrics: false\n", "  reflection: true\n"}},
	} {
		code, stdout, stderr := checkConfigRun(tt.args, envOf())
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", tt.args, code, stderr)
		}
		listen := stdout[strings.Index(stdout, "\nlisten:"):]
		listen = listen[:strings.Index(listen, "\ntokens:")+1]
		for _, w := range tt.want {
			if !strings.Contains(listen, w) {
				t.Errorf("%q: listen lacks %q:%s", tt.args, w, listen)
			}
		}
	}
}
