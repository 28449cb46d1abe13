package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/jetgate/jetgate/app"
)

// ReplicaEnv carries a replica's configuration, as JSON, to a child process
// of the bench: Run finds it and serves that replica instead of measuring.
// The waiting measurement runs each replica as a process of its own, so that
// what /metrics says of its memory is that replica's alone.
const ReplicaEnv = "JETGATE_BENCH_REPLICA"

// replicaConfig is what a child replica serves.
type replicaConfig struct {
	NATSURL       string        `json:"nats_url"`
	Stream        string        `json:"stream"`
	Consumer      string        `json:"consumer"`
	Subject       string        `json:"subject"`
	MaxAckPending int           `json:"max_ack_pending"`
	AckWait       time.Duration `json:"ack_wait"`
	// PushURL, if set, has the replica push its consumer there.
	PushURL         string `json:"push_url,omitempty"`
	PushConcurrency int    `json:"push_concurrency,omitempty"`
	PushHTTP2       bool   `json:"push_http2,omitempty"`
	PushBatch       int    `json:"push_batch,omitempty"` // push.batch.max_messages; 0: none
	// CPUProfile, if set, is a CPU profile of the replica's whole run;
	// BlockProfile and MutexProfile its block and mutex profiles.
	CPUProfile   string `json:"cpu_profile,omitempty"`
	BlockProfile string `json:"block_profile,omitempty"`
	MutexProfile string `json:"mutex_profile,omitempty"`
}

// The child's stdin speaks lines: gcCommand asks for a garbage collection,
// answered with gcDone once it is over, so that the parent reads memory in
// use rather than garbage not yet collected.
const (
	gcCommand = "gc"
	gcDone    = "ok"
)

// replicaStopLimit bounds a replica's shutdown; every caller has returned by
// then, so it has no long poll to wait for.
const replicaStopLimit = 15 * time.Second

// serveReplica is the child's side: it runs jetgate as cfg says, writes its
// addresses to out as one JSON line, answers commands on in, and stops when
// in closes, which it does when the parent exits, however it exits.
func serveReplica(ctx context.Context, cfg string, in io.Reader, out io.Writer) error {
	var c replicaConfig
	if err := json.Unmarshal([]byte(cfg), &c); err != nil {
		return fmt.Errorf("%s: %w", ReplicaEnv, err)
	}
	opts := app.Defaults()
	opts.NATSURL = c.NATSURL
	opts.GRPCAddr, opts.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	opts.Stream, opts.Consumer = c.Stream, c.Consumer
	opts.FilterSubjects = []string{c.Subject}
	opts.MaxAckPending, opts.AckWait = c.MaxAckPending, c.AckWait
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if c.PushURL != "" {
		file, err := pushConfigFile(c)
		if err != nil {
			return err
		}
		defer os.Remove(file)
		opts.ConfigFile = file
	}
	if c.CPUProfile != "" {
		stop, err := startProfile(c.CPUProfile, "")
		if err != nil {
			return err
		}
		defer stop()
	}
	if c.BlockProfile != "" || c.MutexProfile != "" {
		stop := startContention(c.BlockProfile, c.MutexProfile)
		defer func() { _ = stop() }()
	}
	p, err := app.Start(ctx, opts)
	if err != nil {
		return err
	}
	if err := json.NewEncoder(out).Encode(p.Addrs); err != nil {
		return errors.Join(err, p.StopWithin(replicaStopLimit))
	}
	// No goroutine reads in: a signal to the bench's process group cancels
	// the parent too, and the parent closes in as it stops its replicas.
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		if lines.Text() == gcCommand {
			debug.FreeOSMemory() // a full collection, and the freed heap returned
			fmt.Fprintln(out, gcDone)
		}
	}
	return p.StopWithin(replicaStopLimit)
}

// replicaProc is a replica running as a child process, seen from the bench.
type replicaProc struct {
	app.Addrs
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *os.File // the child's stdout, read with deadlines
	lines *bufio.Reader
	hc    *http.Client // for /metrics; its connections close with stop
}

// replicaStartLimit bounds a child's start: exec, connect, bind, serve.
const replicaStartLimit = 30 * time.Second

// startReplica runs command (this program when it is empty) as a replica
// with cfg and waits until it serves.
func startReplica(command []string, cfg replicaConfig) (*replicaProc, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	r, err := startChild(command, ReplicaEnv, string(b))
	if err != nil {
		return nil, err
	}
	line, err := r.readLine(replicaStartLimit)
	if err == nil {
		err = json.Unmarshal([]byte(line), &r.Addrs)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("replica did not start: %w", err), r.stop())
	}
	return r, nil
}

// startChild runs command (this program when it is empty) with env set to
// value, its stdout read by lines.
func startChild(command []string, env, value string) (*replicaProc, error) {
	if len(command) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find this program to run child processes: %w", err)
		}
		command = []string{exe}
	}
	// exec.Cmd's own pipes would be closed by Wait; os.Pipe gives a file
	// whose reads take deadlines, so that a stalled child cannot hang us.
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = append(os.Environ(), env+"="+value)
	cmd.Stdout, cmd.Stderr = outW, os.Stderr // a child's panic shows
	stdin, err := cmd.StdinPipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("start replica %s: %w", command[0], err)
	}
	outW.Close() // the child holds its own copy
	return &replicaProc{cmd: cmd, stdin: stdin, out: outR, lines: bufio.NewReader(outR),
		hc: &http.Client{Timeout: 10 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()}}, nil
}

func (r *replicaProc) readLine(within time.Duration) (string, error) {
	if err := r.out.SetReadDeadline(time.Now().Add(within)); err != nil {
		return "", err
	}
	line, err := r.lines.ReadString('\n')
	return strings.TrimSpace(line), err
}

// collect has the replica collect its garbage and waits until it has.
func (r *replicaProc) collect() error {
	if _, err := fmt.Fprintln(r.stdin, gcCommand); err != nil {
		return err
	}
	line, err := r.readLine(10 * time.Second)
	if err == nil && line != gcDone {
		err = fmt.Errorf("replica answered %q to %s", line, gcCommand)
	}
	return err
}

// stop closes the child's stdin, which ends it, and kills it if it has not
// ended within replicaStopLimit.
func (r *replicaProc) stop() error {
	_ = r.stdin.Close()
	defer r.out.Close()
	defer r.hc.CloseIdleConnections()
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(replicaStopLimit + 5*time.Second):
		_ = r.cmd.Process.Kill()
		return errors.Join(errors.New("replica did not stop in time: killed"), <-done)
	}
}

// replicaMetrics are the figures of one replica's /metrics the waiting
// measurement reads: the consumer's gauges and the process's memory.
type replicaMetrics struct {
	Replicas, Open, Allowed, Queued float64
	Heap, Stack, Goroutines, RSS    float64
}

// inUse is the memory the Go runtime has in use: heap spans and stacks.
func (m replicaMetrics) inUse() float64 { return m.Heap + m.Stack }

// metrics reads the replica's /metrics; the consumer's gauges are those with
// its stream and consumer labels.
func (r *replicaProc) metrics(ctx context.Context, stream, consumer string) (replicaMetrics, error) {
	fams, err := metricFamilies(ctx, r.hc, "http://"+r.HTTP+"/metrics")
	if err != nil {
		return replicaMetrics{}, err
	}
	get := func(name string) float64 { return sumOf(fams, name, stream, consumer) }
	return replicaMetrics{
		Replicas: get("jetgate_replicas"), Open: get("jetgate_pulls_open"),
		Allowed: get("jetgate_pulls_allowed"), Queued: get("jetgate_fetches_queued"),
		Heap: get("go_memstats_heap_inuse_bytes"), Stack: get("go_memstats_stack_inuse_bytes"),
		Goroutines: get("go_goroutines"), RSS: get("process_resident_memory_bytes"),
	}, nil
}

// startReplicas starts n replica processes and waits until each counts all
// n on the consumer's roster. It returns those it started, even on error.
func startReplicas(ctx context.Context, o Options, cfg replicaConfig, n int) ([]*replicaProc, error) {
	var reps []*replicaProc
	for range n {
		r, err := startReplica(o.ReplicaCommand, cfg)
		if err != nil {
			return reps, err
		}
		reps = append(reps, r)
	}
	return reps, poll(ctx, fmt.Sprintf("every replica to count %d on the roster", n), func() (bool, error) {
		ms, err := readMetrics(ctx, reps, o)
		for _, m := range ms {
			if int(m.Replicas) != n {
				return false, err
			}
		}
		return err == nil, err
	})
}

// dialReplicas opens enough gRPC connections to each replica for its share
// of the callers, and makes sure each is up, so that the memory measured
// before the callers start has the connections in it already.
func dialReplicas(ctx context.Context, reps []*replicaProc, callers int) ([][]*grpc.ClientConn, error) {
	per := (callers + len(reps) - 1) / len(reps)
	conns := make([][]*grpc.ClientConn, len(reps))
	for i, r := range reps {
		for range max(1, (per+callersPerConn-1)/callersPerConn) {
			c, err := grpc.NewClient(r.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				return conns, err
			}
			conns[i] = append(conns[i], c)
			hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err = healthpb.NewHealthClient(c).Check(hctx, &healthpb.HealthCheckRequest{})
			cancel()
			if err != nil {
				return conns, fmt.Errorf("replica %s: %w", r.GRPC, err)
			}
		}
	}
	return conns, nil
}

// settledMetrics has every replica collect its garbage, then reads them all.
func settledMetrics(ctx context.Context, reps []*replicaProc, o Options) ([]replicaMetrics, error) {
	for _, r := range reps {
		if err := r.collect(); err != nil {
			return nil, err
		}
	}
	return readMetrics(ctx, reps, o)
}

func readMetrics(ctx context.Context, reps []*replicaProc, o Options) ([]replicaMetrics, error) {
	ms := make([]replicaMetrics, len(reps))
	for i, r := range reps {
		var err error
		if ms[i], err = r.metrics(ctx, o.Stream, o.Consumer); err != nil {
			return nil, err
		}
	}
	return ms, nil
}

// pushConfigFile writes the configuration of a replica that pushes: flags
// describe no push block.
func pushConfigFile(c replicaConfig) (string, error) {
	f, err := os.CreateTemp("", "jetgate-bench-push-*.yaml")
	if err != nil {
		return "", err
	}
	defer f.Close()
	batch := ""
	if c.PushBatch > 0 {
		batch = fmt.Sprintf(", batch: {max_messages: %d}", c.PushBatch)
	}
	_, err = fmt.Fprintf(f, `nats: {url: %q}
listen: {grpc: "127.0.0.1:0", http: "127.0.0.1:0"}
consumers:
  - stream: %s
    name: %s
    ack_wait: %s
    max_ack_pending: %d
    filter_subjects: [%q]
    push: {url: %q, concurrency: %d, http2: %t%s}
`, c.NATSURL, c.Stream, c.Consumer, c.AckWait, c.MaxAckPending, c.Subject, c.PushURL, c.PushConcurrency, c.PushHTTP2, batch)
	return f.Name(), err
}
