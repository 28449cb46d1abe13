package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The scale measurement: what a consumer costs. o.Scale consumers behind
// o.ScaleReplicas jetgate processes on a NATS server process of their own,
// the bench a third process. It counts the requests the server hears, by
// kind, and reads each replica's CPU and memory, first with nobody calling
// (idle), then with o.ScaleBusy consumers in Fetch+Ack loops (busy).

// scaleSettle is let pass between the last replica's ready and the idle
// window, so that the window holds no start-up work.
const scaleSettle = 2 * time.Second

// ScaleReport is one run of the scale measurement.
type ScaleReport struct {
	Machine   Machine `json:"machine"`
	Consumers int     `json:"consumers"`
	Replicas  int     `json:"replicas"`
	// Source is where the consumers come from: "config" (the file) or
	// "on_demand" (created with nats.go, bound on their first call).
	Source string `json:"source"`
	// Ready is each replica's time from its start to /readyz 200.
	Ready []time.Duration `json:"ready_ns"`
	// StartError is why the replicas did not all become ready.
	StartError string `json:"start_error,omitempty"`
	// Startup counts the requests from the replicas' start to the last
	// one's ready, by kind.
	Startup map[string]int `json:"startup_requests"`
	// On demand, BindAll is how long a GetConsumer of every consumer
	// through every replica took, one after another, and Bind counts their
	// requests: after it, every replica serves every consumer. FirstCall
	// is the latency of those calls, each the one that bound its consumer
	// on its replica; BoundCall that of a second GetConsumer of each
	// through replica 1, bound by then. RSSBeforeBind is each replica's
	// RSS before the first calls (ready, nothing bound).
	BindAll       time.Duration  `json:"bind_all_ns,omitempty"`
	Bind          map[string]int `json:"bind_requests,omitempty"`
	FirstCall     *Latency       `json:"first_call,omitempty"`
	BoundCall     *Latency       `json:"bound_call,omitempty"`
	RSSBeforeBind []float64      `json:"rss_before_bind_bytes,omitempty"`
	Idle          *ScaleWindow   `json:"idle,omitempty"`
	Busy          *ScaleWindow   `json:"busy,omitempty"`
}

// ScaleWindow is what one window measured.
type ScaleWindow struct {
	Seconds float64 `json:"seconds"`
	// Requests are the requests a second the NATS server heard, by kind;
	// Total all of them.
	Requests map[string]float64 `json:"requests_per_sec"`
	Total    float64            `json:"total_per_sec"`
	// Replicas are each replica's CPU (percent of one core) and RSS at the
	// window's end; NATSCPU the server's.
	Replicas []ReplicaUse `json:"replicas"`
	NATSCPU  float64      `json:"nats_cpu_pct"`
	// BusyConsumers were in Fetch+Ack loops, Consumed messages a second.
	BusyConsumers int     `json:"busy_consumers"`
	Consumed      float64 `json:"consumed_per_sec"`
}

// ReplicaUse is one replica's use of the machine over a window.
type ReplicaUse struct {
	CPUPct float64 `json:"cpu_pct"`
	RSS    float64 `json:"rss_bytes"`
}

// RunScale runs the scale measurement once and prints it (and with o.JSON
// writes it). A start that fails is reported, with the replica's error,
// and returned.
func RunScale(ctx context.Context, o Options) (ScaleReport, error) {
	rep := ScaleReport{Machine: thisMachine(), Consumers: o.Scale, Replicas: o.ScaleReplicas, Source: "config"}
	if o.ScaleOnDemand {
		rep.Source = "on_demand"
	}
	err := runScale(ctx, o, &rep)
	if err != nil && rep.StartError == "" && rep.Idle == nil {
		return rep, err
	}
	rep.print(o.Out)
	if o.JSON != "" {
		err = errors.Join(err, writeJSON(o.JSON, rep))
	}
	return rep, err
}

func runScale(ctx context.Context, o Options, rep *ScaleReport) error {
	dir, err := os.MkdirTemp("", "jetgate-bench-scale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	natsProc, err := startChild(o.ReplicaCommand, NATSEnv, filepath.Join(dir, "js"))
	if err != nil {
		return err
	}
	defer natsProc.stop()
	url, err := natsProc.readLine(replicaStartLimit)
	if err != nil {
		return fmt.Errorf("NATS server did not start: %w", err)
	}
	nc, err := nats.Connect(url, nats.Name("jetgate-bench scale"))
	if err != nil {
		return err
	}
	defer nc.Close()
	if err := scaleConsumers(ctx, nc, o); err != nil {
		return err
	}
	bin := o.Jetgate
	if bin == "" {
		if bin, err = buildJetgate(dir); err != nil {
			return err
		}
	}
	counter, err := countRequests(nc)
	if err != nil {
		return err
	}
	defer counter.stop()
	reps, err := startScaleReplicas(ctx, dir, bin, url, o)
	for _, r := range reps {
		defer r.stop()
		rep.Ready = append(rep.Ready, r.ready)
	}
	rep.Startup = counter.snapshot()
	if err != nil {
		rep.StartError = err.Error()
		return err
	}
	if o.ScaleOnDemand {
		if err := bindOnDemand(ctx, counter, reps, o, rep); err != nil {
			return err
		}
	}
	if err := pause(ctx, scaleSettle); err != nil {
		return err
	}
	pids := scalePIDs(natsProc, reps)
	if rep.Idle, err = measureWindow(ctx, counter, pids, o.ScaleIdle, nil); err != nil {
		return err
	}
	busy, err := startBusy(ctx, nc, reps, o)
	if err != nil {
		return err
	}
	rep.Busy, err = measureWindow(ctx, counter, pids, o.ScaleIdle, busy)
	return errors.Join(err, busy.stop())
}

// scaleConsumers creates the stream, with room for o.Scale consumers, and, for the on-demand source, the
// consumers, as an operator's tools would.
func scaleConsumers(ctx context.Context, nc *nats.Conn, o Options) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	// nats-server allows 1,000 consumers a stream unless told otherwise.
	s, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: o.Stream, Subjects: []string{o.Subject + ".>"},
		MaxMsgs: streamMaxMsgs, MaxConsumers: max(o.Scale, 1000)})
	if err != nil || !o.ScaleOnDemand {
		return err
	}
	for i := range o.Scale {
		name := consumerName(i)
		if _, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy,
			FilterSubject: o.Subject + "." + name}); err != nil {
			return fmt.Errorf("create consumer %s: %w", name, err)
		}
	}
	return nil
}

// scalePIDs are the processes whose CPU a window reads: NATS first, then
// each replica.
func scalePIDs(natsProc *replicaProc, reps []*scaleReplica) []int {
	pids := []int{natsProc.cmd.Process.Pid}
	for _, r := range reps {
		pids = append(pids, r.pid())
	}
	return pids
}

// measureWindow counts requests and CPU over d; with busy, also what its
// loops consumed.
func measureWindow(ctx context.Context, counter *requestCounter, pids []int, d time.Duration, busy *busyLoops) (*ScaleWindow, error) {
	before, cpu0, start := counter.snapshot(), cpuOf(pids), time.Now()
	var consumed0 int64
	if busy != nil {
		consumed0 = busy.consumed.Load()
	}
	if err := pause(ctx, d); err != nil {
		return nil, err
	}
	after, cpu1, secs := counter.snapshot(), cpuOf(pids), time.Since(start).Seconds()
	w := &ScaleWindow{Seconds: secs, Requests: make(map[string]float64)}
	for k, n := range after {
		if dn := n - before[k]; dn > 0 {
			w.Requests[k] = float64(dn) / secs
			w.Total += float64(dn) / secs
		}
	}
	pct := func(i int) float64 { return 100 * (cpu1[i] - cpu0[i]).Seconds() / secs }
	w.NATSCPU = pct(0)
	for i := 1; i < len(pids); i++ {
		w.Replicas = append(w.Replicas, ReplicaUse{CPUPct: pct(i), RSS: pidRSS(pids[i])})
	}
	if busy != nil {
		w.BusyConsumers = len(busy.names)
		w.Consumed = float64(busy.consumed.Load()-consumed0) / secs
	}
	return w, nil
}

func cpuOf(pids []int) []time.Duration {
	out := make([]time.Duration, len(pids))
	for i, p := range pids {
		out[i] = pidCPU(p)
	}
	return out
}

// pause waits d: a measured window, not a wait for a condition.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// minus is a's counts less b's, the kinds that grew.
func minus(a, b map[string]int) map[string]int {
	out := make(map[string]int)
	for k, n := range a {
		if d := n - b[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}
