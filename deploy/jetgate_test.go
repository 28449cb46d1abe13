package deploy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// repo is the jetgate repository this module lives in.
const repo = ".."

// binDir holds what the package's tests build, removed once they have run.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "jetgate-deploy-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// jetgateBin builds the gateway's ./cmd/jetgate once for the package's
// tests, as the image builder does (static, -trimpath).
var jetgateBin = sync.OnceValues(func() (string, error) {
	out := filepath.Join(binDir, "jetgate")
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "./cmd/jetgate")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly", "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/jetgate: %w\n%s", err, b)
	}
	return out, nil
})

func mustBin(t *testing.T) string {
	t.Helper()
	bin, err := jetgateBin()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// environ is the test's environment without jetgate's own variables, which
// would stand in for flags.
func environ() []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "JETGATE_") {
			env = append(env, e)
		}
	}
	return env
}

// lockedBuffer is a process's output, read while it is written.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var servingHTTP = regexp.MustCompile(`msg="jetgate serving".* http=(\S+)`)

// startJetgate runs jetgate with the configuration file config (its paths
// relative to a directory of the test's) until /readyz answers 200, and
// returns the base URL of its HTTP listener. It is stopped with SIGTERM as
// the test ends.
func startJetgate(t *testing.T, config string) string {
	t.Helper()
	bin := mustBin(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "jetgate.yaml")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var log lockedBuffer
	cmd := exec.Command(bin, "--config", file)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = environ(), dir, &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("jetgate did not stop within 30s of SIGTERM:\n%s", log.String())
		}
	})
	var base string
	until(t, 60*time.Second, exited, &log, "jetgate serves /readyz", func() bool {
		if base == "" {
			m := servingHTTP.FindStringSubmatch(log.String())
			if m == nil {
				return false
			}
			base = "http://" + m[1]
		}
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return base
}

// until polls cond every 20ms until it holds; the process exiting first,
// or within passing, fails the test with its log.
func until(t *testing.T, within time.Duration, exited <-chan struct{}, log fmt.Stringer, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(within)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-exited:
			t.Fatalf("%s: jetgate exited:\n%s", what, log)
		case <-deadline:
			t.Fatalf("%s: not within %v:\n%s", what, within, log)
		case <-tick.C:
		}
	}
}

// get answers the body of a GET that must answer 200.
func get(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	return b
}
