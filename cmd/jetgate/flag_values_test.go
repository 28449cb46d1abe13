package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

// A bad --log-level or boolean flag is answered as every other bad flag is:
// the flag, the value, and what it takes. They were answered in the
// library's words (`--log-level "verbose": slog: level string "verbose":
// unknown name`, `invalid boolean value "maybe" for -metrics: parse
// error`, `JETGATE_METRICS="maybe" (--metrics): parse error`), and --help
// gave the level's default as INFO where the README gives info.
func TestLogLevelAndBooleanFlagsSayWhatTheyTake(t *testing.T) {
	for _, tt := range []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"--log-level", "verbose"}, nil, `--log-level "verbose": not a log level: use debug, info, warn or error`},
		{nil, []string{"JETGATE_LOG_LEVEL", "verbose"}, `JETGATE_LOG_LEVEL="verbose" (--log-level): not a log level: use debug, info, warn or error`},
		{[]string{"--metrics=maybe"}, nil, `--metrics "maybe": not true or false`},
		{nil, []string{"JETGATE_METRICS", "maybe"}, `JETGATE_METRICS="maybe" (--metrics): not true or false`},
	} {
		_, err := parse(tt.args, envOf(tt.env...))
		if err == nil || err.Error() != tt.want {
			t.Errorf("%q %q: %v; want %q", tt.args, tt.env, err, tt.want)
		}
	}
	for _, level := range []string{"debug", "INFO", "warn", "error"} {
		if _, err := parse([]string{"--log-level", level}, envOf()); err != nil {
			t.Errorf("--log-level %s: %v", level, err)
		}
	}
	// --help writes to standard error.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	_, _ = parse([]string{"--help"}, envOf())
	os.Stderr = stderr
	_ = w.Close()
	help, _ := io.ReadAll(r)
	if !strings.Contains(string(help), "debug | info | warn | error (default info)") {
		t.Errorf("--help: %s\nwant the level's default written info", help)
	}
}
