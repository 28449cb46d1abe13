package main

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMain runs main itself when asked to (RECEIVER_TEST_MAIN holds its
// arguments).
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv("RECEIVER_TEST_MAIN"); ok {
		os.Args = append([]string{"receiver"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A receiver that cannot listen says why and exits, without first claiming
// to listen.
func TestBusyPortIsNotAnnounced(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RECEIVER_TEST_MAIN=--addr "+l.Addr().String())
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the receiver ran on a taken port: %s", out)
	}
	if strings.Contains(string(out), "receiving on") || !strings.Contains(string(out), "address already in use") {
		t.Errorf("output %q; want the bind error alone", out)
	}
}
