package reliability

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/token"
)

// natsProcess is a nats-server binary, built from the module the project
// requires, running as a process of its own on a fixed port and store, so
// that it can be killed with SIGKILL and started again on both.
type natsProcess struct {
	bin, dir string
	port     int
	cmd      *exec.Cmd
}

func startNATSProcess(t *testing.T) *natsProcess {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nats-server")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/nats-io/nats-server/v2").CombinedOutput(); err != nil {
		t.Fatalf("build nats-server: %v\n%s", err, out)
	}
	p := &natsProcess{bin: bin, dir: t.TempDir(), port: natstest.FreePort(t)}
	p.start(t)
	t.Cleanup(func() { p.kill() })
	return p
}

func (p *natsProcess) url() string { return "nats://127.0.0.1:" + strconv.Itoa(p.port) }

// start runs the server and returns once it accepts connections.
func (p *natsProcess) start(t *testing.T) time.Time {
	t.Helper()
	p.cmd = exec.Command(p.bin, "-a", "127.0.0.1", "-p", strconv.Itoa(p.port), "-js", "-sd", p.dir)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var up time.Time
	natstest.Eventually(t, 30*time.Second, "nats-server accepting connections", func() bool {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(p.port), 100*time.Millisecond)
		if err != nil {
			return false
		}
		up = time.Now()
		_ = c.Close()
		return true
	})
	return up
}

// kill sends SIGKILL: no shutdown, no flush beyond what the store did.
func (p *natsProcess) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
	}
}

// settleAfter records when the first settle confirmed after a moment came.
type settleAfter struct {
	*deliveryCheck
	mu    sync.Mutex
	after time.Time
	at    time.Time
}

func (f *settleAfter) Settled(a Action, m *jetgatev1.Message) {
	f.deliveryCheck.Settled(a, m)
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.after.IsZero() && f.at.IsZero() && now.After(f.after) {
		f.at = now
	}
}

func (f *settleAfter) from(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.after, f.at = t, time.Time{}
}

func (f *settleAfter) since() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.at.IsZero() {
		return -1
	}
	return f.at.Sub(f.after)
}

// TestFaultNATSKilledHard kills the NATS server with SIGKILL mid-traffic
// (file store, two replicas, random answers) and starts it again on the
// same store: nothing is lost, no settle lands on a later delivery, and the
// time from NATS accepting connections again to the first settle confirmed
// is measured (target 2s: bounded by the reconnect wait, 50ms here and
// 500ms in jetgate, and the replica's resubscribing).
func TestFaultNATSKilledHard(t *testing.T) {
	ns := startNATSProcess(t)
	var gs []*gwtest.Replica
	keys := token.RandomKeyring()
	for range 2 {
		nc, err := nats.Connect(ns.url(), reconnecting()...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		if len(gs) == 0 {
			natstest.Stream(t, nc, stream, "orders.>")
		}
		gs = append(gs, gateway(t, nc, keys, 5*time.Second))
	}
	d := driver(gs...)
	d.Answer = randomAnswers
	check := &settleAfter{deliveryCheck: newDeliveryCheck()}
	d.Watch = check
	n, kills := scale(800, 6000), scale(1, 3)
	var recoveries []time.Duration
	run(t, d, n, 4, 4*time.Minute, func(ctx context.Context) {
		for i := 1; i <= kills && ctx.Err() == nil; i++ {
			waitPublished(ctx, d.Checker, i*n/(kills+1))
			ns.kill()
			backoff(ctx, 500*time.Millisecond)
			check.from(ns.start(t))
			for check.since() < 0 && ctx.Err() == nil {
				backoff(ctx, 10*time.Millisecond)
			}
			recoveries = append(recoveries, check.since())
		}
	})
	t.Logf("first settle after NATS accepted connections again: %v", recoveries)
	if wrong := check.verdict(); len(wrong) > 0 {
		t.Fatalf("%d settles landed on a delivery they were not issued for, e.g. %s", len(wrong), wrong[0])
	}
	for _, r := range recoveries {
		if r > 15*time.Second {
			t.Fatalf("a settle first succeeded %v after NATS was back; want a few seconds at most", r)
		}
	}
}
