package keycheck

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/token"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// logs is a log buffer safe for the NATS callback goroutines.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

func ring(t *testing.T, signing string, verifyOnly ...string) *token.Keyring {
	t.Helper()
	secrets := [][]byte{[]byte(strings.Repeat(signing, 32))}
	for _, v := range verifyOnly {
		secrets = append(secrets, []byte(strings.Repeat(v, 32)))
	}
	kr, err := token.NewKeyring(secrets...)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

type replica struct {
	c    *Checker
	logs *logs
	reg  *prometheus.Registry
}

// startReplica starts a checker on its own connection and waits until its
// start-up check has reported.
func startReplica(t *testing.T, url string, kr *token.Keyring) replica {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return startOn(t, nc, kr, 0)
}

// startOn starts a checker on nc that checks again every recheck (0: the
// default) and waits until its start-up check has reported.
func startOn(t *testing.T, nc *nats.Conn, kr *token.Keyring, recheck time.Duration) replica {
	t.Helper()
	r := replica{logs: &logs{}, reg: prometheus.NewRegistry()}
	var err error
	r.c, err = Start(Options{Conn: nc, Keys: kr, Metrics: r.reg, Window: 300 * time.Millisecond, Recheck: recheck,
		Logger: slog.New(slog.NewTextHandler(r.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.c.Close)
	select {
	case <-r.c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the start-up check did not report in 10s")
	}
	return r
}

func (r replica) gauge(t *testing.T) float64 {
	t.Helper()
	return testutil.ToFloat64(r.c.gauge)
}

func TestKeysCompared(t *testing.T) {
	for _, tc := range []struct {
		name         string
		first, other func(t *testing.T) *token.Keyring
		mismatch     bool
	}{
		{"same key", func(t *testing.T) *token.Keyring { return ring(t, "a") }, func(t *testing.T) *token.Keyring { return ring(t, "a") }, false},
		{"different keys", func(t *testing.T) *token.Keyring { return ring(t, "a") }, func(t *testing.T) *token.Keyring { return ring(t, "b") }, true},
		// Halfway through a rotation: each signs with a key the other
		// verifies.
		{"rotation", func(t *testing.T) *token.Keyring { return ring(t, "a", "b") }, func(t *testing.T) *token.Keyring { return ring(t, "b", "a") }, false},
		// The starting replica verifies its peer, but the peer cannot
		// verify it: its tokens would fail there.
		{"only one way", func(t *testing.T) *token.Keyring { return ring(t, "b") }, func(t *testing.T) *token.Keyring { return ring(t, "a", "b") }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := natstest.Start(t).ClientURL()
			first := startReplica(t, url, tc.first(t))
			if first.c.Mismatched() != 0 || first.gauge(t) != 0 {
				t.Fatalf("a replica alone found %d mismatches (gauge %v)", first.c.Mismatched(), first.gauge(t))
			}
			second := startReplica(t, url, tc.other(t))
			want := 0
			if tc.mismatch {
				want = 1
			}
			if got := second.c.Mismatched(); got != want {
				t.Errorf("mismatched peers %d; want %d", got, want)
			}
			if got := second.gauge(t); got != float64(want) {
				t.Errorf("jetgate_token_key_mismatch %v; want %d", got, want)
			}
			if n := second.logs.count("level=WARN msg=\"TOKEN KEY MISMATCH"); n != want {
				t.Errorf("the starting replica logged %d mismatch warnings; want %d:\n%s", n, want, second.logs.buf.String())
			}
			if !tc.mismatch && second.logs.count("peers=1") != 1 {
				t.Errorf("the starting replica did not log one matching peer:\n%s", second.logs.buf.String())
			}
			if tc.mismatch && strings.Contains(tc.name, "different") {
				// The peer that answered cannot verify the newcomer either, and
				// says so.
				natstest.Eventually(t, 5*time.Second, "the answering peer warns", func() bool {
					return first.logs.count("TOKEN KEY MISMATCH") == 1
				})
			}
			if !tc.mismatch && first.logs.count("level=WARN") != 0 {
				t.Errorf("the answering peer warned:\n%s", first.logs.buf.String())
			}
		})
	}
}

// Every peer counts once, however many there are.
func TestCountsEachPeer(t *testing.T) {
	url := natstest.Start(t).ClientURL()
	startReplica(t, url, ring(t, "a"))
	startReplica(t, url, ring(t, "a"))
	startReplica(t, url, ring(t, "c"))
	r := startReplica(t, url, ring(t, "b"))
	if r.c.Mismatched() != 3 || r.gauge(t) != 3 {
		t.Errorf("mismatched %d, gauge %v; want 3 peers", r.c.Mismatched(), r.gauge(t))
	}
	if n := r.logs.count("TOKEN KEY MISMATCH"); n != 3 {
		t.Errorf("%d warnings; want one per peer", n)
	}
}

// Junk on the subject gets no answer and no warning.
func TestJunkIsIgnored(t *testing.T) {
	ns := natstest.Start(t)
	r := startReplica(t, ns.ClientURL(), ring(t, "a"))
	nc := natstest.Connect(t, ns)
	for _, junk := range []string{"", "{", `{"id":""}`, "[1,2]"} {
		_, err := nc.Request(Subject, []byte(junk), 200*time.Millisecond)
		if !errors.Is(err, nats.ErrTimeout) {
			t.Errorf("request %q: %v; want no answer", junk, err)
		}
	}
	if r.logs.count("level=WARN") != 0 {
		t.Errorf("junk logged a warning:\n%s", r.logs.buf.String())
	}
}

// A forged answer (right shape, MAC under no shared key) counts as a
// mismatch, not a match.
func TestForgedAnswerIsAMismatch(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	sub, err := nc.Subscribe(Subject, func(m *nats.Msg) {
		_ = m.Respond([]byte(`{"id":"forger","mac":"1.AAAA","knows_yours":true}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	r := startReplica(t, ns.ClientURL(), ring(t, "a"))
	if r.c.Mismatched() != 1 {
		t.Errorf("mismatched %d; want the forger counted", r.c.Mismatched())
	}
}

// Close stops a check still waiting for answers.
func TestCloseStopsAWaitingCheck(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	c, err := Start(Options{Conn: nc, Keys: ring(t, "a"), Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not stop the check")
	}
}

// Start on a closed connection returns its error.
func TestStartOnAClosedConnectionFails(t *testing.T) {
	nc := natstest.Connect(t, natstest.Start(t))
	nc.Close()
	if _, err := Start(Options{Conn: nc, Keys: ring(t, "a")}); !errors.Is(err, nats.ErrConnectionClosed) {
		t.Fatalf("Start on a closed connection: %v; want nats.ErrConnectionClosed", err)
	}
}

// A replica that found a peer with another key checks again while any
// does, so that jetgate_token_key_mismatch (and the critical alert on it)
// falls once the odd one out is restarted with the right keys, as the
// alert says to do: before, it stayed until this replica restarted too (a
// helper's test). The recheck warns no more: the first check did.
func TestTheMismatchCountFallsOnceThePeerIsMended(t *testing.T) {
	url := natstest.Start(t).ClientURL()
	b := startReplica(t, url, ring(t, "o"))
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	a := startOn(t, nc, ring(t, "n", "o"), 100*time.Millisecond)
	if a.gauge(t) != 1 {
		t.Fatalf("A's gauge %v; want 1 while B lacks the new key", a.gauge(t))
	}
	warned := a.logs.count("TOKEN KEY MISMATCH")
	b.c.Close()
	startReplica(t, url, ring(t, "n", "o"))
	natstest.Eventually(t, 10*time.Second, "A's count back at 0", func() bool { return a.gauge(t) == 0 })
	if n := a.logs.count("TOKEN KEY MISMATCH"); n != warned {
		t.Errorf("A warned %d times more as it checked again", n-warned)
	}
	if n := b.logs.count("TOKEN KEY MISMATCH"); n != 1 {
		t.Errorf("B warned %d times of A's key; want once, at A's first check", n)
	}
}
