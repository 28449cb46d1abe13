package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/jetgate/jetgate/app"
)

// NATSEnv makes a child process of the bench a NATS server with JetStream,
// storing in the directory it names: it prints its client URL and serves
// until its stdin closes.
const NATSEnv = "JETGATE_BENCH_NATS"

// deployment is the shape users run, as the bench starts it: a NATS server
// of its own (a child process), jetgate as its own processes (the built
// binary, one or more replicas on one consumer sharing one token key), and
// the callers in the bench.
type deployment struct {
	dir      string
	nats     *replicaProc
	natsURL  string
	jetgates []*jetgateProc
}

// jetgateProc is one jetgate process of a deployment, and where it serves.
type jetgateProc struct {
	cmd        *exec.Cmd
	grpc, http string
}

// startDeployed starts NATS, the stream and n jetgate processes, one after
// the other, each ready before the next starts. With o.CPUProfile, the first
// jetgate writes its CPU profile beside the bench's (cpu.out:
// cpu.jetgate.out), covering its whole run.
func startDeployed(ctx context.Context, o Options, n int) (*deployment, error) {
	dir, err := os.MkdirTemp("", "jetgate-bench-")
	if err != nil {
		return nil, err
	}
	d := &deployment{dir: dir}
	if err := d.start(ctx, o, n); err != nil {
		d.stop()
		return nil, err
	}
	return d, nil
}

func (d *deployment) start(ctx context.Context, o Options, n int) error {
	var err error
	if d.nats, err = startChild(o.ReplicaCommand, NATSEnv, filepath.Join(d.dir, "js")); err != nil {
		return err
	}
	if d.natsURL, err = d.nats.readLine(replicaStartLimit); err != nil {
		return fmt.Errorf("NATS server did not start: %w", err)
	}
	if err := capStream(ctx, d.natsURL, o); err != nil {
		return err
	}
	bin := o.Jetgate
	if bin == "" {
		if bin, err = buildJetgate(d.dir); err != nil {
			return err
		}
	}
	keyFile, err := writeKeyFile(d.dir)
	if err != nil {
		return err
	}
	for i := range n {
		j, err := startJetgateProc(ctx, bin, d.natsURL, keyFile, o, i == 0 && o.CPUProfile != "")
		if j != nil {
			d.jetgates = append(d.jetgates, j)
		}
		if err != nil {
			return fmt.Errorf("jetgate %d of %d: %w", i+1, n, err)
		}
	}
	return nil
}

// buildJetgate builds cmd/jetgate into dir, from the module the bench runs in.
func buildJetgate(dir string) (string, error) {
	bin := filepath.Join(dir, "jetgate")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/jetgate/jetgate/cmd/jetgate").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build jetgate (or give --jetgate): %v\n%s", err, out)
	}
	return bin, nil
}

// startJetgateProc starts bin on the bench's stream and consumer and waits
// until it answers /readyz. It returns the process it started, even on error.
func startJetgateProc(ctx context.Context, bin, natsURL, keyFile string, o Options, profile bool) (*jetgateProc, error) {
	j := &jetgateProc{grpc: freeAddr(), http: freeAddr()}
	args := []string{"--nats-url", natsURL, "--stream", o.Stream, "--consumer", o.Consumer,
		"--filter-subject", o.Subject, "--grpc-addr", j.grpc, "--http-addr", j.http,
		"--token-key-file", keyFile, "--log-level", "warn"}
	if profile {
		args = append(args, "--cpuprofile", profileFile(o.CPUProfile, "jetgate"))
	}
	j.cmd = exec.Command(bin, args...)
	j.cmd.Stderr = os.Stderr
	if err := j.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	deadline := time.Now().Add(replicaStartLimit)
	for {
		resp, err := http.Get("http://" + j.http + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return j, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return j, fmt.Errorf("jetgate did not become ready at %s", j.http)
		}
		time.Sleep(50 * time.Millisecond) // polling a process we started; nothing to wait on
	}
}

// stop ends jetgate (SIGTERM: a graceful stop, its profile written) and
// kills it if it has not ended within replicaStopLimit.
func (j *jetgateProc) stop() {
	_ = j.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = j.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(replicaStopLimit):
		_ = j.cmd.Process.Kill()
		<-done
	}
}

// addrs are where each jetgate process serves, and the NATS server.
func (d *deployment) addrs() []app.Addrs {
	as := make([]app.Addrs, len(d.jetgates))
	for i, j := range d.jetgates {
		as[i] = app.Addrs{GRPC: j.grpc, HTTP: j.http, NATS: d.natsURL}
	}
	return as
}

// stop ends the jetgate processes, all at once, then NATS, and removes
// their store.
func (d *deployment) stop() {
	var wg sync.WaitGroup
	for _, j := range d.jetgates {
		wg.Go(j.stop)
	}
	wg.Wait()
	if d.nats != nil {
		_ = d.nats.stop()
	}
	_ = os.RemoveAll(d.dir)
}

// freeAddr is a loopback address free a moment ago.
func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	defer l.Close()
	return l.Addr().String()
}

// serveNATS is the NATS child's side.
func serveNATS(dir string, in io.Reader, out io.Writer) error {
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoSigs: true})
	if err != nil {
		return err
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return errors.New("NATS server not ready")
	}
	fmt.Fprintln(out, ns.ClientURL())
	_, _ = io.Copy(io.Discard, in) // until the parent closes it
	ns.Shutdown()
	ns.WaitForShutdown()
	return nil
}
