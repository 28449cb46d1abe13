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
// of its own (a child process), jetgate as its own process (the built
// binary), and the callers in the bench.
type deployment struct {
	dir     string
	nats    *replicaProc
	jetgate *exec.Cmd
	addrs   app.Addrs
}

// startDeployed starts NATS, the stream and jetgate as their own processes.
// With o.CPUProfile, jetgate writes its CPU profile beside the bench's
// (cpu.out: cpu.jetgate.out), covering its whole run.
func startDeployed(ctx context.Context, o Options) (*deployment, error) {
	dir, err := os.MkdirTemp("", "jetgate-bench-")
	if err != nil {
		return nil, err
	}
	d := &deployment{dir: dir}
	if d.nats, err = startChild(o.ReplicaCommand, NATSEnv, filepath.Join(dir, "js")); err != nil {
		d.stop()
		return nil, err
	}
	if d.addrs.NATS, err = d.nats.readLine(replicaStartLimit); err != nil {
		d.stop()
		return nil, fmt.Errorf("NATS server did not start: %w", err)
	}
	if err := capStream(ctx, d.addrs.NATS, o); err != nil {
		d.stop()
		return nil, err
	}
	bin := o.Jetgate
	if bin == "" {
		if bin, err = buildJetgate(dir); err != nil {
			d.stop()
			return nil, err
		}
	}
	if err := d.startJetgate(ctx, bin, o); err != nil {
		d.stop()
		return nil, err
	}
	return d, nil
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

func (d *deployment) startJetgate(ctx context.Context, bin string, o Options) error {
	grpcAddr, httpAddr := freeAddr(), freeAddr()
	args := []string{"--nats-url", d.addrs.NATS, "--stream", o.Stream, "--consumer", o.Consumer,
		"--filter-subject", o.Subject, "--grpc-addr", grpcAddr, "--http-addr", httpAddr, "--log-level", "warn"}
	if o.CPUProfile != "" {
		args = append(args, "--cpuprofile", profileFile(o.CPUProfile, "jetgate"))
	}
	d.jetgate = exec.Command(bin, args...)
	d.jetgate.Stderr = os.Stderr
	if err := d.jetgate.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	d.addrs.GRPC, d.addrs.HTTP = grpcAddr, httpAddr
	deadline := time.Now().Add(replicaStartLimit)
	for {
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("jetgate did not become ready at %s", httpAddr)
		}
		time.Sleep(50 * time.Millisecond) // polling a process we started; nothing to wait on
	}
}

// stop ends jetgate (SIGTERM: a graceful stop, its profile written), then
// NATS, and removes their store.
func (d *deployment) stop() {
	if d.jetgate != nil && d.jetgate.Process != nil {
		_ = d.jetgate.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = d.jetgate.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(replicaStopLimit):
			_ = d.jetgate.Process.Kill()
			<-done
		}
	}
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
