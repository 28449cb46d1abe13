package readme_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// done marks the end of a block's output in the session.
const done = "@@readme-block-done@@"

// shell is one bash session, as a reader's terminal: variables and
// functions a block defines stay for the next. A failing command ends it
// (set -e), and the test with it.
type shell struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *syncBuffer
}

func newShell(t *testing.T, dir string) *shell {
	t.Helper()
	cmd := exec.Command("bash", "--noprofile", "--norc")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s := &shell{cmd: cmd, lines: make(chan string, 1024), stderr: &syncBuffer{}}
	cmd.Stderr = s.stderr
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = s.stdin.Close()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	if _, err := io.WriteString(s.stdin, "set -e\n"); err != nil {
		t.Fatal(err)
	}
	return s
}

// run runs one block and returns what it printed, line by line.
func (s *shell) run(t *testing.T, text string) []string {
	t.Helper()
	if _, err := io.WriteString(s.stdin, text+"\nprintf '\\n"+done+"\\n'\n"); err != nil {
		t.Fatalf("the shell is gone: %v\n%s", err, s.stderr.String())
	}
	var out []string
	timeout := time.NewTimer(blockTimeout)
	defer timeout.Stop()
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				t.Fatalf("a command failed (set -e ended the session); it printed\n%s\nstderr:\n%s", strings.Join(out, "\n"), s.stderr.String())
			}
			if l == done {
				return trimBlank(out)
			}
			out = append(out, l)
		case <-timeout.C:
			t.Fatalf("the block did not end within %v; it printed\n%s\nstderr:\n%s", blockTimeout, strings.Join(out, "\n"), s.stderr.String())
		}
	}
}

func trimBlank(lines []string) []string {
	var out []string
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// server is a block that runs until stopped, as in a terminal of its own.
type server struct {
	b      block
	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *syncBuffer
	exited chan struct{}
}

// startServer starts b and waits until it is ready.
func startServer(t *testing.T, dir string, b block) *server {
	t.Helper()
	cmd := exec.Command("bash", "--noprofile", "--norc", "-c", b.text)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s := &server{b: b, cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.stdout, s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(s.exited) }()
	if b.ready == "" {
		return s
	}
	addr, path, _ := strings.Cut(b.ready, "/")
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(blockTimeout)
	for {
		select {
		case <-s.exited:
			t.Fatalf("the server exited before it was ready:\n%s%s", s.stdout.String(), s.stderr.String())
		default:
		}
		if path == "" {
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				_ = c.Close()
				return s
			}
		} else if resp, err := hc.Get("http://" + addr + "/" + path); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready on %s within %v:\n%s", b.ready, blockTimeout, s.stderr.String())
		}
		select {
		case <-s.exited:
		case <-time.After(100 * time.Millisecond): // polling a port: nothing to wait on
		}
	}
}

// stopAll stops the servers as Ctrl-C does (SIGINT to the terminal's
// process group), then compares what each printed with the README.
func stopAll(t *testing.T, servers []*server) {
	t.Helper()
	for _, s := range servers {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.exited
			t.Errorf("README.md:%d did not stop within 30s of Ctrl-C:\n%s", s.b.line, s.stderr.String())
		}
		check(t, s.b, trimBlank(strings.Split(s.stdout.String(), "\n")))
		if t.Failed() {
			t.Logf("README.md:%d wrote to stderr:\n%s", s.b.line, s.stderr.String())
		}
	}
}

// syncBuffer is a buffer a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
