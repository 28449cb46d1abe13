package reliability

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/natstest"
)

// libAckWait is the ack_wait of the libraries' consumers: short, so that
// handlers past it are extended, and what a killed replica held comes back
// soon.
const libAckWait = 2 * time.Second

// library is a client library run as a subscriber process of its own on a
// consumer of its own (subject orders.<consumer>).
type library struct {
	name, consumer string
	command        func(address, log string) *exec.Cmd
}

// TestFaultLibrariesInTheLoop runs a subscriber of each client library
// (testdata/subscriber.py on clients/python, testdata/subscriber.mjs on
// clients/ts; concurrency 8) in a process of its own, each on a consumer
// of its own (ack_wait 2s), through a TCP round-robin balancer in front of
// three jetgate processes. N messages each (200 short, 10,000 long) are
// published while replicas are SIGKILLed and replaced every few seconds
// and, in the long form, NATS is restarted twice. Handlers run for a random
// time (about 5% past ack_wait, extended by the library), one in ten of the first
// two deliveries raises (nak'ed), the rest ack their message themselves.
// Each process writes a JSON line as each handler starts and ends.
//
// Asserts, per library: lost 0 (every message's handler finished with its
// ack confirmed, or with an ack that failed and a message that never came
// back: ambiguous, reported, and shown to have taken by the consumer
// drained on the server), no message in two handlers at once, no message
// handed to a handler after its ack was confirmed, and that the run
// exercised extensions, raises and the library's reconnects. A library whose
// runtime is not installed (python3 with grpc and protobuf; node 20 with the
// built clients/ts and its node_modules) is left out; with neither, the
// test is skipped.
func TestFaultLibrariesInTheLoop(t *testing.T) {
	libs, missing := libraries(t)
	if len(libs) == 0 {
		t.Skipf("no client library can run here: %s", strings.Join(missing, "; "))
	}
	for _, m := range missing {
		t.Logf("left out: %s", m)
	}
	n, natsRestarts := scale(200, 10000), scale(0, 2)
	killEvery := time.Duration(scale(3, 5)) * time.Second

	dir := t.TempDir()
	ns := natstest.StartIn(t, dir, -1)
	port := ns.Addr().(*net.TCPAddr).Port
	nc := natstest.Connect(t, ns, reconnecting()...)
	natstest.Stream(t, nc, stream, "orders.>")
	bin := buildJetgate(t)
	cfg := librariesConfig(t, port, libs)
	// A balancer per library, over the same replicas, so that the test can
	// tell which replica each library is talking to.
	lbs := make([]*roundRobin, len(libs))
	for i := range libs {
		lbs[i] = newRoundRobin(t)
	}
	var replicas []*process
	for range 3 {
		p := startProcess(t, bin, "--config", cfg)
		for _, lb := range lbs {
			lb.add(p.grpcAddr)
		}
		replicas = append(replicas, p)
	}

	subs := make([]*libProcess, len(libs))
	for i, l := range libs {
		subs[i] = startLibrary(t, l, lbs[i].addr())
	}
	pub := &libPublisher{js: mustJetStream(t, nc), seqs: make(map[string][]uint64)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(scale(2, 15))*time.Minute)
	var bg sync.WaitGroup
	defer bg.Wait() // after cancel, below
	defer cancel()
	bg.Go(func() { pub.run(ctx, libs, n, time.Duration(scale(20, 8))*time.Millisecond) })

	// Every few seconds while publishing goes on, kill the replica a library
	// talks to (each library in turn; a random one if it talks to none) and
	// replace it; restart NATS at even points of the publishing.
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 43))
	kills, restarts := 0, 0
	for ctx.Err() == nil && (pub.count() < n*len(libs) || kills < 2) {
		backoff(ctx, killEvery)
		if restarts < natsRestarts && pub.count() >= (restarts+1)*n*len(libs)/(natsRestarts+1) {
			down := time.Now()
			ns.Shutdown()
			ns.WaitForShutdown()
			backoff(ctx, 500*time.Millisecond)
			ns = natstest.StartIn(t, dir, port)
			t.Logf("NATS shut down at %s, back at %s", clock(down), clock(time.Now()))
			restarts++
			continue
		}
		i := rng.IntN(len(replicas))
		busy := lbs[kills%len(lbs)].busiest()
		for j, r := range replicas {
			if r.grpcAddr == busy {
				i = j
			}
		}
		old := replicas[i]
		t.Logf("%s: replica %s killed", clock(time.Now()), old.grpcAddr)
		_ = old.cmd.Process.Signal(syscall.SIGKILL)
		_ = old.cmd.Wait()
		replicas[i] = startProcess(t, bin, "--config", cfg)
		for _, lb := range lbs {
			lb.remove(old.grpcAddr)
			lb.add(replicas[i].grpcAddr)
		}
		kills++
	}
	published := pub.published()
	t.Logf("%d replicas killed and replaced, NATS restarted %d times, %d messages published", kills, restarts, pub.count())

	// Every message acked (or its ack of unknown outcome), then a while more
	// for a redelivery to show.
	if !waitFor(ctx, time.Until(deadlineOf(ctx)), func() bool {
		for i, l := range libs {
			if len(subs[i].verdict(published[l.name]).lost) > 0 {
				return false
			}
		}
		return true
	}) {
		for i, l := range libs {
			t.Logf("%s: %d of %d not acked yet", l.name, len(subs[i].verdict(published[l.name]).lost), len(published[l.name]))
		}
	}
	backoff(ctx, 2*libAckWait+time.Second)
	for _, s := range subs {
		s.stop(t)
	}
	for i, l := range libs {
		v := subs[i].verdict(published[l.name])
		t.Logf("%s: %d published, %d handler runs (%d raised, %d acks refused: %v), lost %d, ambiguous %d %v, overlap %d, acked then redelivered %d; library: %s",
			l.name, len(published[l.name]), v.runs, v.raised, v.ackFailed, v.refusals, len(v.lost), len(v.ambiguous), v.ambiguousBy,
			len(v.overlap), len(v.ackedAgain), subs[i].summary)
		if len(v.lost) > 0 || len(v.overlap) > 0 || len(v.ackedAgain) > 0 {
			t.Errorf("%s: lost %d (e.g. %v), overlap %d (e.g. %v), acked then redelivered %d (e.g. %v)",
				l.name, len(v.lost), first(v.lost), len(v.overlap), first(v.overlap), len(v.ackedAgain), first(v.ackedAgain))
		}
		// The run did what it is for: handlers raised, leases were extended
		// past ack_wait, and the library's stream was cut by a kill.
		st := subs[i].stats()
		if v.raised == 0 || st["extended"] == 0 || st["reconnects"] == 0 {
			t.Errorf("%s: the run did not exercise raises (%d), extensions (%v) and reconnects (%v)",
				l.name, v.raised, st["extended"], st["reconnects"])
		}
		assertConsumerDrained(t, nc, l.consumer)
	}
	if kills == 0 || restarts != natsRestarts {
		t.Fatalf("%d kills, %d NATS restarts of %d", kills, restarts, natsRestarts)
	}
}

func first[T any](s []T) any {
	if len(s) == 0 {
		return nil
	}
	return s[0]
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// libraries returns the libraries that can run here, and why the others
// cannot.
func libraries(t *testing.T) (libs []library, missing []string) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	script := func(name string) string { return filepath.Join(root, "reliability", "testdata", name) }
	const py = "/usr/bin/python3"
	pyPath := filepath.Join(root, "clients", "python")
	check := exec.Command(py, "-c", "import grpc, google.protobuf, jetgate")
	check.Env = append(os.Environ(), "PYTHONPATH="+pyPath, "PYTHONDONTWRITEBYTECODE=1")
	if out, err := check.CombinedOutput(); err != nil {
		missing = append(missing, fmt.Sprintf("python: %s with grpc, protobuf and clients/python: %v %s", py, err, bytes.TrimSpace(out)))
	} else {
		libs = append(libs, library{name: "python", consumer: "py", command: func(address, log string) *exec.Cmd {
			c := exec.Command(py, script("subscriber.py"), address, stream, "py", log, strconv.FormatFloat(libAckWait.Seconds(), 'f', -1, 64))
			c.Env = append(os.Environ(), "PYTHONPATH="+pyPath, "PYTHONDONTWRITEBYTECODE=1")
			return c
		}})
	}
	dist := filepath.Join(root, "clients", "ts", "dist", "index.js")
	check = exec.Command("node", "--input-type=module", "-e",
		`if (Number(process.versions.node.split(".")[0]) < 20) throw new Error("node " + process.version); await import(process.env.JETGATE_TS);`)
	check.Env = append(os.Environ(), "JETGATE_TS="+dist)
	if out, err := check.CombinedOutput(); err != nil {
		missing = append(missing, fmt.Sprintf("typescript: node 20 with clients/ts built (dist) and installed (node_modules): %v %s", err, firstLine(out)))
	} else {
		libs = append(libs, library{name: "typescript", consumer: "ts", command: func(address, log string) *exec.Cmd {
			c := exec.Command("node", script("subscriber.mjs"), address, stream, "ts", log, strconv.FormatInt(libAckWait.Milliseconds(), 10))
			c.Env = append(os.Environ(), "JETGATE_TS="+dist)
			return c
		}})
	}
	return libs, missing
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}

// librariesConfig writes the replicas' configuration: a consumer per
// library, and the suite's own (which startProcess asks for).
func librariesConfig(t *testing.T, natsPort int, libs []library) string {
	t.Helper()
	keyFile := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keyFile, []byte("a-test-secret-of-forty-characters-long!!\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "nats: {url: \"nats://127.0.0.1:%d\"}\ntokens: {key_files: [%s]}\nconsumers:\n", natsPort, keyFile)
	fmt.Fprintf(&b, "  - {stream: %s, name: %s, filter_subjects: [orders.%s]}\n", stream, consumer, consumer)
	for _, l := range libs {
		fmt.Fprintf(&b, "  - {stream: %s, name: %s, ack_wait: %v, filter_subjects: [orders.%s]}\n", stream, l.consumer, libAckWait, l.consumer)
	}
	cfg := filepath.Join(t.TempDir(), "libraries.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func mustJetStream(t *testing.T, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
