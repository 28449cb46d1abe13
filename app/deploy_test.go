package app

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/natstest"
)

// getURL answers the status and body of GET url, or 0 when nothing answers.
func getURL(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Replicas started with token keys that differ say so: the one starting
// logs a warning and sets jetgate_token_key_mismatch, as a Deployment whose
// pods mount different Secrets would. With the same key, nothing.
func TestReplicaWithAnotherTokenKeyWarns(t *testing.T) {
	for _, tc := range []struct {
		name   string
		second string
		want   int
	}{
		{"same key", "a", 0},
		{"different key", "b", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := natstest.Start(t).ClientURL()
			replica := func(secret string) (*Process, *syncBuffer) {
				var logs syncBuffer
				o := testOptions(t)
				o.NATSURL, o.NATSListen, o.StreamSubjects = url, "", []string{"orders.>"}
				o.TokenKeyFile = writeKeyFile(t, strings.Repeat(secret, 32))
				o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
				p := start(t, o)
				natstest.Eventually(t, 10*time.Second, "the token key check reports", func() bool {
					return logs.count("token key check") == 1 || logs.count("TOKEN KEY MISMATCH") > 0
				})
				return p, &logs
			}
			_, firstLogs := replica("a")
			second, logs := replica(tc.second)
			if n := logs.count("level=WARN", "TOKEN KEY MISMATCH"); n != tc.want {
				t.Errorf("the second replica logged %d mismatch warnings; want %d", n, tc.want)
			}
			natstest.Eventually(t, 10*time.Second, "the gauge says so", func() bool {
				code, body := getURL("http://" + second.HTTP + "/metrics")
				return code == http.StatusOK && strings.Contains(body, "\njetgate_token_key_mismatch "+strconv.Itoa(tc.want)+"\n")
			})
			if tc.want == 0 && firstLogs.count("TOKEN KEY MISMATCH") != 0 {
				t.Error("the first replica warned of a mismatch with the same key")
			}
		})
	}
}

// While NATS is away /readyz answers 503, so that a rolling update waits and
// a Service sends nothing to the replica; /healthz stays 200, so that it is
// not restarted while nats.go reconnects; both are 200 once NATS is back.
func TestReadyzFollowsNATS(t *testing.T) {
	dir := t.TempDir()
	ns := natstest.StartIn(t, dir, -1)
	_, port, _ := net.SplitHostPort(ns.Addr().String())
	portNum, _ := strconv.Atoi(port)
	o := testOptions(t)
	o.NATSURL, o.NATSListen, o.StreamSubjects = ns.ClientURL(), "", []string{"orders.>"}
	p := start(t, o)
	probe := func(path string) int {
		code, _ := getURL("http://" + p.HTTP + path)
		return code
	}
	if c := probe("/readyz"); c != http.StatusOK {
		t.Fatalf("/readyz %d with NATS up; want 200", c)
	}
	ns.Shutdown()
	ns.WaitForShutdown()
	natstest.Eventually(t, 10*time.Second, "/readyz answers 503 with NATS down", func() bool {
		return probe("/readyz") == http.StatusServiceUnavailable
	})
	if c := probe("/healthz"); c != http.StatusOK {
		t.Errorf("/healthz %d while reconnecting; want 200 (no restart for an outage)", c)
	}
	natstest.StartIn(t, dir, portNum)
	natstest.Eventually(t, 20*time.Second, "/readyz answers 200 once NATS is back", func() bool {
		return probe("/readyz") == http.StatusOK
	})
}
