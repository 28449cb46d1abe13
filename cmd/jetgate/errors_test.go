package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A flag's bad value is named by the flag and says what the flag takes;
// one from the environment is named by its variable; a configuration
// error about a value the environment gave names the variable too.
func TestErrorsNameWhereTheValueCameFrom(t *testing.T) {
	for _, tt := range []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"--ack-wait", "5"}, nil, `--ack-wait "5": not a duration: write a number with its unit, such as 30s`},
		{[]string{"--max-batch", "lots"}, nil, `--max-batch "lots": not a whole number`},
		{[]string{"--start-seq", "-1"}, nil, `--start-seq "-1": not a whole number of 0 or more`},
		{[]string{"--nope"}, nil, "--nope: no such flag"},
		{nil, []string{"JETGATE_ACK_WAIT", "5"}, `JETGATE_ACK_WAIT="5" (--ack-wait): not a duration`},
	} {
		_, err := parse(tt.args, envOf(tt.env...))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%v %v: %v; want %q", tt.args, tt.env, err, tt.want)
		}
	}
	file := filepath.Join(t.TempDir(), "jetgate.yaml")
	if err := os.WriteFile(file, []byte("streams: [{name: ORDERS, subjects: [\"orders.>\"]}]\nconsumers: [{stream: ORDERS, name: billing}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := checkConfigRun([]string{"--config", file}, envOf("JETGATE_GRPC_ADDR", "nowhere"))
	if code == 0 || !strings.Contains(stderr, "JETGATE_GRPC_ADDR (--grpc-addr)") {
		t.Errorf("a bad address from the environment: exit %d, %q; want it named by its variable", code, stderr)
	}
}

// A YAML fault is reported at its own line, not where the block around it
// began.
func TestYAMLFaultsAtTheirLine(t *testing.T) {
	file := filepath.Join(t.TempDir(), "jetgate.yaml")
	text := "streams:\n  - name: ORDERS\n    subjects: [\"orders.>\"]\n   consumers:\n  - {stream: ORDERS, name: billing}\n"
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, stderr := checkConfigRun([]string{"--config", file}, envOf())
	if !strings.Contains(stderr, file+":4:") || !strings.Contains(stderr, "indentation") {
		t.Errorf("stderr %q; want the fault at line 4, about indentation", stderr)
	}
}
