package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// scaleReadyLimit bounds a replica's start with every consumer bound.
const scaleReadyLimit = 5 * time.Minute

// scaleReplica is one jetgate process of the scale measurement.
type scaleReplica struct {
	cmd        *exec.Cmd
	grpc, http string
	log        string // its stderr
	ready      time.Duration
	ended      chan struct{} // closed once the process has ended
	err        error         // how it ended, once ended is closed
}

// consumerName is the scale measurement's consumer i; it takes
// subject.<name> only.
func consumerName(i int) string { return fmt.Sprintf("c%05d", i) }

// writeScaleConfig writes replica i's configuration file: o.Scale
// consumers in the file, or (o.ScaleOnDemand) none there and an on_demand
// block matching the consumers the bench created.
func writeScaleConfig(dir string, i int, natsURL, keyFile string, o Options) (file, grpcAddr, httpAddr string, err error) {
	grpcAddr, httpAddr = freeAddr(), freeAddr()
	var b strings.Builder
	fmt.Fprintf(&b, "nats: {url: %q}\nlisten: {grpc: %q, http: %q}\ntokens: {key_files: [%q]}\nauth: {allow_unauthenticated: true}\n",
		natsURL, grpcAddr, httpAddr, keyFile)
	if o.ScaleOnDemand {
		fmt.Fprintf(&b, "on_demand:\n  match: [{stream: %s, consumer: \"c*\"}]\n  idle_unbind: 10m\n", o.Stream)
	} else {
		b.WriteString("consumers:\n")
		for c := range o.Scale {
			fmt.Fprintf(&b, "  - {stream: %s, name: %s, filter_subjects: [%q]}\n", o.Stream, consumerName(c), o.Subject+"."+consumerName(c))
		}
	}
	file = filepath.Join(dir, "jetgate-"+strconv.Itoa(i+1)+".yaml")
	return file, grpcAddr, httpAddr, os.WriteFile(file, []byte(b.String()), 0o600)
}

// writeKeyFile writes the token key every replica shares.
func writeKeyFile(dir string) (string, error) {
	file := filepath.Join(dir, "token-keys")
	return file, os.WriteFile(file, []byte(hex.EncodeToString(randomBytes(32))+"\n"), 0o600)
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return b
}

// startScaleReplicas starts o.ScaleReplicas jetgate processes of bin at
// once, as a deployment rolls out, and waits until each answers /readyz
// with 200. It returns those it started, even on error.
func startScaleReplicas(ctx context.Context, dir, bin, natsURL string, o Options) ([]*scaleReplica, error) {
	keyFile, err := writeKeyFile(dir)
	if err != nil {
		return nil, err
	}
	var reps []*scaleReplica
	for i := range o.ScaleReplicas {
		file, g, h, err := writeScaleConfig(dir, i, natsURL, keyFile, o)
		if err != nil {
			return reps, err
		}
		r := &scaleReplica{grpc: g, http: h, log: filepath.Join(dir, "jetgate-"+strconv.Itoa(i+1)+".log"), ended: make(chan struct{})}
		if err := r.start(bin, file); err != nil {
			return reps, err
		}
		reps = append(reps, r)
	}
	errs := make([]error, len(reps))
	done := make(chan int, len(reps))
	for i, r := range reps {
		go func() {
			errs[i] = r.waitReady(ctx, i)
			done <- i
		}()
	}
	for range reps {
		<-done
	}
	return reps, errors.Join(errs...)
}

func (r *scaleReplica) start(bin, config string) error {
	logf, err := os.Create(r.log)
	if err != nil {
		return err
	}
	r.cmd = exec.Command(bin, "--config", config, "--log-level", "warn")
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	if err := r.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		r.err = r.cmd.Wait()
		logf.Close()
		close(r.ended)
	}()
	return nil
}

// waitReady polls /readyz until it answers 200, and records how long that
// took from the process's start.
func (r *scaleReplica) waitReady(ctx context.Context, i int) error {
	start := time.Now()
	hc := &http.Client{Timeout: 5 * time.Second}
	defer hc.CloseIdleConnections()
	for {
		resp, err := hc.Get("http://" + r.http + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				r.ready = time.Since(start)
				return nil
			}
		}
		select {
		case <-r.ended:
			return fmt.Errorf("replica %d ended before it was ready (%v): %s", i+1, r.err, lastLines(r.log, 3))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond): // polling a process we started; nothing to wait on
		}
		if time.Since(start) > scaleReadyLimit {
			return fmt.Errorf("replica %d not ready after %v: %s", i+1, scaleReadyLimit, lastLines(r.log, 3))
		}
	}
}

// stop ends the replica as a deployment does (SIGTERM), and kills it if it
// has not ended within replicaStopLimit.
func (r *scaleReplica) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.ended:
	case <-time.After(replicaStopLimit):
		_ = r.cmd.Process.Kill()
		<-r.ended
	}
}

func (r *scaleReplica) pid() int { return r.cmd.Process.Pid }

// lastLines is the end of a log file, on one line.
func lastLines(file string, n int) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// pidRSS is process pid's resident memory, in bytes, from /proc; 0 where it
// cannot be read.
func pidRSS(pid int) float64 {
	v, ok := procField("/proc/"+strconv.Itoa(pid)+"/status", "VmRSS")
	if !ok {
		return 0
	}
	var kb float64
	if _, err := fmt.Sscanf(v, "%f kB", &kb); err != nil {
		return 0
	}
	return kb * 1024
}
