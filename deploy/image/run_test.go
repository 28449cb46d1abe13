package image

import (
	"bufio"
	"bytes"
	"net"
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

	natsserver "github.com/nats-io/nats-server/v2/server"
)

// startNATS runs a JetStream server on a random port for the test.
func startNATS(t *testing.T) string {
	t.Helper()
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server did not start")
	}
	return ns.ClientURL()
}

// container is jetgate started from an unpacked image as its runtime would:
// the entrypoint, the image's environment and working directory.
type container struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr bytes.Buffer
	exited chan struct{} // closed once the process has exited, err set
	err    error
}

func (c *container) log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

// run starts the image's entrypoint with args. The image's listen
// addresses keep their host part (every address) and take port 0, so that
// tests can run side by side.
func run(t *testing.T, args ...string) *container {
	t.Helper()
	img := loaded(t)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	unpack(t, img, root)
	c := &container{exited: make(chan struct{})}
	c.cmd = exec.Command(filepath.Join(root, cf.Config.Entrypoint[0]), append(cf.Config.Cmd, args...)...)
	c.cmd.Dir = filepath.Join(root, cf.Config.WorkingDir)
	for _, e := range cf.Config.Env {
		if k, v, _ := strings.Cut(e, "="); strings.HasSuffix(k, "_ADDR") {
			e = k + "=" + strings.TrimSuffix(v, v[strings.LastIndex(v, ":"):]) + ":0"
		}
		c.cmd.Env = append(c.cmd.Env, e)
	}
	pipe, err := c.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			c.mu.Lock()
			c.stderr.WriteString(sc.Text() + "\n")
			c.mu.Unlock()
		}
		c.err = c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
	})
	return c
}

// wait waits for the process to exit and returns its error.
func (c *container) wait(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case <-c.exited:
		return c.err
	case <-time.After(within):
		t.Fatalf("jetgate still running after %v:\n%s", within, c.log())
		return nil
	}
}

// until polls cond until it holds, failing the test if the process exits
// first or within passes.
func (c *container) until(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(within)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-c.exited:
			t.Fatalf("%s: jetgate exited: %v\n%s", what, c.err, c.log())
		case <-deadline:
			t.Fatalf("%s: not within %v:\n%s", what, within, c.log())
		case <-tick.C:
		}
	}
}

var servingHTTP = regexp.MustCompile(`msg="jetgate serving".* http=(\S+)`)

// The image's jetgate, pointed at a NATS server, serves: /readyz answers
// 200. SIGTERM (the image's stop signal) stops it cleanly.
func TestImageServesAgainstNATS(t *testing.T) {
	url := startNATS(t)
	key := filepath.Join(t.TempDir(), "token.key")
	if err := os.WriteFile(key, []byte("# test\n"+strings.Repeat("k", 40)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := run(t, "--nats-url="+url, "--stream-subjects=orders.>", "--token-key-file="+key, "--allow-unauthenticated")
	var addr string
	c.until(t, 60*time.Second, "jetgate serves", func() bool {
		if m := servingHTTP.FindStringSubmatch(c.log()); m != nil {
			addr = m[1]
		}
		return addr != ""
	})
	host, port, _ := net.SplitHostPort(addr)
	if host != "::" && host != "0.0.0.0" {
		t.Errorf("listening on %s; want every address of the container", addr)
	}
	c.until(t, 30*time.Second, "/readyz answers 200", func() bool {
		resp, err := http.Get("http://127.0.0.1:" + port + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := c.wait(t, 30*time.Second); err != nil {
		t.Errorf("jetgate exited with %v after SIGTERM:\n%s", err, c.log())
	}
}

// Listening on every address without authentication is refused, as jetgate
// refuses it anywhere: the image does not open the gateway by default.
func TestImageRefusesOpenListenersWithoutAuth(t *testing.T) {
	c := run(t, "--nats-url="+startNATS(t), "--stream-subjects=orders.>")
	err := c.wait(t, 60*time.Second)
	if err == nil || !strings.Contains(c.log(), "beyond loopback without authentication") {
		t.Errorf("exit %v; want a refusal naming authentication:\n%s", err, c.log())
	}
}
