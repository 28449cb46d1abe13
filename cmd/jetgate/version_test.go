package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jetgate/jetgate/app"
)

// TestMain runs main itself when asked to (JETGATE_TEST_MAIN holds its
// arguments), so that tests see its exit status and output.
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv("JETGATE_TEST_MAIN"); ok {
		os.Args = append([]string{"jetgate"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runMain(t *testing.T, args string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "JETGATE_TEST_MAIN="+args, "JETGATE_VERSION=1.0")
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

func TestVersionFlag(t *testing.T) {
	code, stdout, stderr := runMain(t, "--version")
	if code != 0 || stdout != "jetgate "+app.Version()+"\n" || stderr != "" {
		t.Errorf("--version: exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout, stderr, "jetgate "+app.Version())
	}
}

// --help prints the usage and exits 0, without "flag: help requested".
func TestHelpIsClean(t *testing.T) {
	for _, args := range []string{"--help", "-h", "check-config --help"} {
		code, stdout, stderr := runMain(t, args)
		if code != 0 || strings.Contains(stdout+stderr, "help requested") || !strings.Contains(stderr, "--nats-url") && !strings.Contains(stderr, "-nats-url") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 0 and the usage alone", args, code, stdout, stderr)
		}
	}
	if code, _, stderr := runMain(t, "--bogus"); code != 2 || !strings.Contains(stderr, "-bogus") {
		t.Errorf("--bogus: exit %d, %q; want 2 naming it", code, stderr)
	}
}
