package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jetgate/jetgate/app"
)

// The client libraries a soak can be consumed by (Options.SoakLibraries).
const (
	LibraryPython = "python" // clients/python, run by bench/soak/subscriber.py
	LibraryTS     = "ts"     // clients/ts, run by bench/soak/subscriber.mjs
)

// module is the module path whose go.mod marks the repository's root.
const module = "github.com/jetgate/jetgate"

// subscriberStopLimit bounds a subscriber's drain and exit once its stdin
// closes: its own drain is bounded by 30s.
const subscriberStopLimit = 60 * time.Second

// library is a client library the soak can run a subscriber of.
type library struct {
	name string
	// command runs its subscriber on the consumer through the jetgate at
	// address.
	command func(address, stream, consumer string) *exec.Cmd
}

// findLibraries returns the libraries named, each checked to be runnable
// here: its runtime installed and the library importable.
func findLibraries(names []string) ([]library, error) {
	if len(names) == 0 {
		return nil, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	root, err := repoRoot(wd)
	if err != nil {
		return nil, err
	}
	libs := make([]library, len(names))
	for i, name := range names {
		if libs[i], err = findLibrary(root, name); err != nil {
			return nil, err
		}
	}
	return libs, nil
}

func findLibrary(root, name string) (library, error) {
	script := func(file string) string { return filepath.Join(root, "bench", "soak", file) }
	switch name {
	case LibraryPython:
		const py = "/usr/bin/python3"
		env := append(os.Environ(), "PYTHONPATH="+filepath.Join(root, "clients", "python"), "PYTHONDONTWRITEBYTECODE=1")
		check := exec.Command(py, "-c", "import jetgate")
		check.Env = env
		if out, err := check.CombinedOutput(); err != nil {
			return library{}, fmt.Errorf("the python subscriber needs %s with grpcio, protobuf and clients/python: %v %s", py, err, firstLine(out))
		}
		return library{name: name, command: func(address, stream, consumer string) *exec.Cmd {
			c := exec.Command(py, script("subscriber.py"), address, stream, consumer)
			c.Env = env
			return c
		}}, nil
	case LibraryTS:
		env := append(os.Environ(), "JETGATE_TS="+filepath.Join(root, "clients", "ts", "dist", "index.js"))
		check := exec.Command("node", "--input-type=module", "-e",
			`if (Number(process.versions.node.split(".")[0]) < 20) throw new Error("node " + process.version); await import(process.env.JETGATE_TS);`)
		check.Env = env
		if out, err := check.CombinedOutput(); err != nil {
			return library{}, fmt.Errorf("the ts subscriber needs node 20 or later with clients/ts built (dist) and installed (node_modules): %v %s", err, firstLine(out))
		}
		return library{name: name, command: func(address, stream, consumer string) *exec.Cmd {
			c := exec.Command("node", script("subscriber.mjs"), address, stream, consumer)
			c.Env = env
			return c
		}}, nil
	}
	return library{}, fmt.Errorf("unknown library %q: use %s or %s", name, LibraryPython, LibraryTS)
}

// repoRoot walks up from dir to the directory whose go.mod declares module.
func repoRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && modulePath(b) == module {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("the client libraries live in the %s repository: no go.mod of it in %s or above", module, dir)
		}
	}
}

// modulePath is the path a go.mod's module line declares.
func modulePath(gomod []byte) string {
	for line := range bytes.Lines(gomod) {
		if f := strings.Fields(string(line)); len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}

// subscriber is a library's subscriber process. It prints a line of counts
// every second and, once its stdin closes and it has drained, a final line
// of its library's stats and errors.
type subscriber struct {
	lib     string
	replica int // index of the replica it consumes through
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	// handled and failed are the counts of its latest line.
	handled, failed atomic.Int64
	stopping        atomic.Bool
	done            chan struct{} // closed once it has exited and its stdout is read
	final           string        // its last line, once done is closed
	err             error         // how it exited, once done is closed
}

// subscriberLine is a line a subscriber prints: counts, or the final stats.
type subscriberLine struct {
	Handled *int64           `json:"handled"`
	Failed  int64            `json:"failed"`
	Stats   map[string]int64 `json:"stats"`
}

// startSubscriber runs lib's subscriber on the bench's consumer through the
// replica at r. Should it exit before stop, errs hears of it.
func startSubscriber(lib library, replica int, r app.Addrs, o Options, errs chan<- error) (*subscriber, error) {
	s := &subscriber{lib: lib.name, replica: replica, cmd: lib.command(r.GRPC, o.Stream, o.Consumer), done: make(chan struct{})}
	s.cmd.Stderr = os.Stderr
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the %s subscriber: %w", lib.name, err)
	}
	go func() {
		defer close(s.done)
		s.read(out)
		s.err = s.cmd.Wait() // after every read, as exec asks
		if !s.stopping.Load() {
			errs <- fmt.Errorf("the %s subscriber ended before the soak did: %v", s.lib, s.err)
		}
	}()
	return s, nil
}

// read takes the subscriber's lines until its stdout ends.
func (s *subscriber) read(out io.Reader) {
	lines := bufio.NewScanner(out)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var l subscriberLine
		if err := json.Unmarshal(lines.Bytes(), &l); err != nil {
			fmt.Fprintf(os.Stderr, "%s subscriber: %s\n", s.lib, lines.Bytes())
			continue
		}
		switch {
		case l.Stats != nil:
			s.final = lines.Text()
		case l.Handled != nil:
			s.handled.Store(*l.Handled)
			s.failed.Store(l.Failed)
		}
	}
	_, _ = io.Copy(io.Discard, out) // past a line too long, so that it never blocks writing
}

// stop closes the subscriber's stdin, which has it drain and exit, and
// kills it if it has not within subscriberStopLimit.
func (s *subscriber) stop() error {
	s.stopping.Store(true)
	_ = s.stdin.Close()
	t := time.NewTimer(subscriberStopLimit)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
		_ = s.cmd.Process.Kill()
		<-s.done
		return fmt.Errorf("the %s subscriber did not stop within %v: killed", s.lib, subscriberStopLimit)
	}
	if s.err != nil {
		return fmt.Errorf("the %s subscriber: %w", s.lib, s.err)
	}
	if s.final == "" {
		return fmt.Errorf("the %s subscriber printed no stats", s.lib)
	}
	return nil
}

// subscribers consume a soak: one process per library, subscriber i
// through replica i mod len(reps).
type subscribers []*subscriber

func startSubscribers(libs []library, reps []app.Addrs, o Options, errs chan<- error) (subscribers, error) {
	var subs subscribers
	for i, lib := range libs {
		s, err := startSubscriber(lib, i%len(reps), reps[i%len(reps)], o, errs)
		if err != nil {
			return nil, errors.Join(err, subs.stop())
		}
		subs = append(subs, s)
	}
	return subs, nil
}

func (subs subscribers) handled() int64 {
	var n int64
	for _, s := range subs {
		n += s.handled.Load()
	}
	return n
}

// stop stops them all at once.
func (subs subscribers) stop() error {
	errs := make([]error, len(subs))
	var wg sync.WaitGroup
	for i, s := range subs {
		wg.Go(func() { errs[i] = s.stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// results are what each subscriber did.
func (subs subscribers) results() []SubscriberResult {
	rs := make([]SubscriberResult, len(subs))
	for i, s := range subs {
		rs[i] = SubscriberResult{Library: s.lib, Replica: s.replica, Handled: s.handled.Load(), Failed: s.failed.Load(), Final: s.final}
	}
	return rs
}
