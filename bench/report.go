package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is one mode's figures. CPU, bytes and allocations are the whole
// process's: the NATS server, jetgate and the bench's clients; for the nats
// modes that is the baseline without jetgate.
type Result struct {
	Mode          string        `json:"mode"`
	Round         int           `json:"round,omitempty"`  // of a round's figures
	Rounds        int           `json:"rounds,omitempty"` // of medians: over how many rounds
	MinMsgsPerSec float64       `json:"min_msgs_per_s,omitempty"`
	MaxMsgsPerSec float64       `json:"max_msgs_per_s,omitempty"`
	Messages      int           `json:"messages"`
	Elapsed       time.Duration `json:"elapsed_ns"`
	MsgsPerSec    float64       `json:"msgs_per_s"`
	Fetch1        Latency       `json:"fetch1"` // consume: publish to receipt on an open stream
	CPUPer100k    float64       `json:"cpu_s_per_100k_msgs"`
	BytesPerMsg   float64       `json:"bytes_per_msg"`
	AllocsPerMsg  float64       `json:"allocs_per_msg"`
	// Deployed, the CPU of the NATS server's process and the gateway's
	// (jetgate, or the mode's own: the floor, the pusher).
	NATSCPUPer100k    float64 `json:"nats_cpu_s_per_100k_msgs,omitempty"`
	GatewayCPUPer100k float64 `json:"gateway_cpu_s_per_100k_msgs,omitempty"`
	// The push modes' endpoint process's CPU.
	EndpointCPUPer100k float64 `json:"endpoint_cpu_s_per_100k_msgs,omitempty"`
}

func newResult(mode string, n int, elapsed time.Duration, u usage) Result {
	per := func(v float64) float64 { return v / float64(n) }
	return Result{
		Mode: mode, Messages: n, Elapsed: elapsed,
		MsgsPerSec:         float64(n) / elapsed.Seconds(),
		CPUPer100k:         per(u.cpu.Seconds()) * 100_000,
		BytesPerMsg:        per(float64(u.bytes)),
		AllocsPerMsg:       per(float64(u.mallocs)),
		NATSCPUPer100k:     per(u.nats.Seconds()) * 100_000,
		GatewayCPUPer100k:  per(u.gateway.Seconds()) * 100_000,
		EndpointCPUPer100k: per(u.endpoint.Seconds()) * 100_000,
	}
}

func (r Result) progress() string {
	return fmt.Sprintf("round %d %-11s %d msgs in %v: %.0f msg/s", r.Round, r.Mode, r.Messages, r.Elapsed.Round(time.Millisecond), r.MsgsPerSec)
}

// median is each figure's median over the rounds rs of one mode.
func median(rs []Result) Result {
	if len(rs) == 1 {
		return rs[0]
	}
	mid := func(f func(Result) float64) float64 {
		vs := make([]float64, len(rs))
		for i, r := range rs {
			vs[i] = f(r)
		}
		slices.Sort(vs)
		if n := len(vs); n%2 == 0 {
			return (vs[n/2-1] + vs[n/2]) / 2
		}
		return vs[len(vs)/2]
	}
	dur := func(f func(Result) time.Duration) time.Duration {
		return time.Duration(mid(func(r Result) float64 { return float64(f(r)) })).Round(time.Microsecond)
	}
	rate := func(r Result) float64 { return r.MsgsPerSec }
	return Result{
		Mode: rs[0].Mode, Rounds: len(rs), Messages: rs[0].Messages,
		Elapsed:       dur(func(r Result) time.Duration { return r.Elapsed }),
		MsgsPerSec:    mid(rate),
		MinMsgsPerSec: slices.MinFunc(rs, func(a, b Result) int { return cmp.Compare(rate(a), rate(b)) }).MsgsPerSec,
		MaxMsgsPerSec: slices.MaxFunc(rs, func(a, b Result) int { return cmp.Compare(rate(a), rate(b)) }).MsgsPerSec,
		Fetch1: Latency{
			P50: dur(func(r Result) time.Duration { return r.Fetch1.P50 }),
			P99: dur(func(r Result) time.Duration { return r.Fetch1.P99 }),
			Max: dur(func(r Result) time.Duration { return r.Fetch1.Max }),
		},
		CPUPer100k:         mid(func(r Result) float64 { return r.CPUPer100k }),
		BytesPerMsg:        mid(func(r Result) float64 { return r.BytesPerMsg }),
		AllocsPerMsg:       mid(func(r Result) float64 { return r.AllocsPerMsg }),
		NATSCPUPer100k:     mid(func(r Result) float64 { return r.NATSCPUPer100k }),
		GatewayCPUPer100k:  mid(func(r Result) float64 { return r.GatewayCPUPer100k }),
		EndpointCPUPer100k: mid(func(r Result) float64 { return r.EndpointCPUPer100k }),
	}
}

// Ratio is one mode's messages/s over another's, with the target.
type Ratio struct {
	Name   string  `json:"name"` // "c/a"
	Of     string  `json:"of"`
	Over   string  `json:"over"`
	Value  float64 `json:"value"`
	Target float64 `json:"target_at_least"`
}

// Share is what a gateway mode costs over the nats mode, per message: the
// gateway plus its clients, less the nats.go client.
type Share struct {
	Mode         string  `json:"mode"`
	CPUPer100k   float64 `json:"cpu_s_per_100k_msgs"`
	BytesPerMsg  float64 `json:"bytes_per_msg"`
	AllocsPerMsg float64 `json:"allocs_per_msg"`
}

// Report is a run's table.
type Report struct {
	Machine  Machine  `json:"machine"`
	Workload Workload `json:"workload"`
	// Results are one per mode: its round's figures, or with more rounds
	// each figure's median.
	Results []Result `json:"results"`
	// Rounds are every round's figures, in the order measured.
	Rounds []Result `json:"rounds"`
	Ratios []Ratio  `json:"ratios"`
	// Fetch1Added is grpc's Fetch(1) p50 less nats's, when both ran.
	Fetch1Added *time.Duration `json:"fetch1_added_p50_ns,omitempty"`
	Shares      []Share        `json:"over_nats,omitempty"`
}

// Workload is what every mode consumed.
type Workload struct {
	Shape    string `json:"shape"` // where NATS, jetgate and the callers ran
	Messages int    `json:"messages_per_mode"`
	Size     int    `json:"message_bytes"`
	Batch    int    `json:"batch"`
	Workers  int    `json:"workers"`
	Samples  int    `json:"fetch1_samples"`
	Rounds   int    `json:"rounds"`
	// PushBatch is the push modes' messages per request; 0: one.
	PushBatch int `json:"push_batch,omitempty"`
}

// The targets.
var targets = []Ratio{
	{Name: "c/a", Of: ModeGRPC, Over: ModeNATS, Target: 0.6},
	{Name: "c/b", Of: ModeGRPC, Over: ModeNATSDouble, Target: 2},
	{Name: "d/a", Of: ModeREST, Over: ModeNATS, Target: 0.4},
	{Name: "e/a", Of: ModeConsume, Over: ModeNATS, Target: 0.7},
	{Name: "f/e", Of: ModePush, Over: ModeConsume, Target: 0.4},
	// Within 1.3x of the pass-through gateway's floor.
	{Name: "c/floor", Of: ModeGRPC, Over: ModeFloor, Target: 0.77},
	{Name: "e/floor", Of: ModeConsume, Over: ModeFloorConsume, Target: 0.77},
	{Name: "f/floor", Of: ModePush, Over: ModePushFloor, Target: 0.77},
}

const fetch1AddedTarget = 250 * time.Microsecond

func newReport(o Options) Report {
	return Report{Machine: thisMachine(), Workload: Workload{Shape: shape(o), Messages: o.Messages, Size: o.Size, Batch: o.Batch,
		Workers: o.Workers, Samples: o.Samples, Rounds: max(o.Rounds, 1), PushBatch: o.PushBatch}}
}

// The shapes a run measures.
const (
	ShapeDeployed  = "deployed: NATS, jetgate and the callers in three processes"
	ShapeInProcess = "in process: NATS, jetgate and the callers in one process"
	ShapeGiven     = "a running jetgate, given by --grpc-addr"
)

func shape(o Options) string {
	switch {
	case o.given:
		return ShapeGiven
	case o.InProcess:
		return ShapeInProcess
	}
	return ShapeDeployed
}

// summarise sets Results: per mode, its figures or their medians.
func (rep *Report) summarise(modes []string) {
	for _, name := range modes {
		if _, done := rep.result(name); done {
			continue
		}
		var rs []Result
		for _, r := range rep.Rounds {
			if r.Mode == name {
				rs = append(rs, r)
			}
		}
		rep.Results = append(rep.Results, median(rs))
	}
}

func (rep *Report) result(mode string) (Result, bool) {
	for _, r := range rep.Results {
		if r.Mode == mode {
			return r, true
		}
	}
	return Result{}, false
}

// compare works out the ratios, the added latency and the shares from the
// modes that ran.
func (rep *Report) compare() {
	for _, t := range targets {
		of, ok1 := rep.result(t.Of)
		over, ok2 := rep.result(t.Over)
		if ok1 && ok2 {
			t.Value = of.MsgsPerSec / over.MsgsPerSec
			rep.Ratios = append(rep.Ratios, t)
		}
	}
	base, ok := rep.result(ModeNATS)
	if !ok {
		return
	}
	if g, ok := rep.result(ModeGRPC); ok {
		d := g.Fetch1.P50 - base.Fetch1.P50
		rep.Fetch1Added = &d
	}
	for _, m := range []string{ModeGRPC, ModeREST, ModeConsume} {
		if r, ok := rep.result(m); ok {
			rep.Shares = append(rep.Shares, Share{Mode: m, CPUPer100k: r.CPUPer100k - base.CPUPer100k,
				BytesPerMsg: r.BytesPerMsg - base.BytesPerMsg, AllocsPerMsg: r.AllocsPerMsg - base.AllocsPerMsg})
		}
	}
}

func (rep *Report) header() string {
	w, m := rep.Workload, rep.Machine
	rounds := ""
	if w.Rounds > 1 {
		rounds = fmt.Sprintf("; %d rounds, medians shown", w.Rounds)
	}
	if w.PushBatch > 0 {
		rounds += fmt.Sprintf("; push batches of up to %d", w.PushBatch)
	}
	return fmt.Sprintf("jetgate-bench: %d messages of %d B per mode, batch %d, %d workers, Fetch(1) over %d samples%s\n"+
		"%s\n%s %s/%s, %d CPUs (GOMAXPROCS %d), %s, %s memory, CPUs %.0f%% idle before the run",
		w.Messages, w.Size, w.Batch, w.Workers, w.Samples, rounds, w.Shape, m.Go, m.OS, m.Arch, m.CPUs, m.GOMAXPROCS, m.CPUModel, m.Memory, m.Idle)
}

func (rep *Report) print(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	spread := rep.Workload.Rounds > 1
	row := func(cols ...string) {
		if !spread {
			cols = slices.Delete(cols, 2, 3)
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
	}
	apart := rep.Workload.Shape == ShapeDeployed
	head := []string{"mode", "msg/s", "min-max", "Fetch(1) p50", "p99", "CPU s/100k", "B/msg", "allocs/msg"}
	if apart {
		head = append(head, "NATS CPU", "gateway CPU", "endpoint CPU")
	}
	row(head...)
	cpu := func(v float64) string {
		if v > 0 {
			return fmt.Sprintf("%.2f", v)
		}
		return "-"
	}
	for _, r := range rep.Results {
		cols := []string{r.Mode, thousands(r.MsgsPerSec), thousands(r.MinMsgsPerSec) + "-" + thousands(r.MaxMsgsPerSec),
			ms(r.Fetch1.P50), ms(r.Fetch1.P99), cpu(r.CPUPer100k), thousands(r.BytesPerMsg), fmt.Sprintf("%.1f", r.AllocsPerMsg)}
		if apart {
			cols = append(cols, cpu(r.NATSCPUPer100k), cpu(r.GatewayCPUPer100k), cpu(r.EndpointCPUPer100k))
		}
		row(cols...)
	}
	tw.Flush()
	if rep.Workload.Shape == ShapeInProcess {
		fmt.Fprintln(out, "CPU, B/msg and allocs/msg are the whole bench process (NATS server + jetgate + clients); for the nats")
		fmt.Fprintln(out, "modes that is the baseline without jetgate.")
	} else {
		fmt.Fprintln(out, "CPU, B/msg and allocs/msg are the bench process's: the callers' alone. NATS CPU and gateway CPU are")
		fmt.Fprintln(out, "the CPU seconds per 100k messages of the NATS server's process and the gateway's (jetgate, the floor's, the pusher).")
	}
	fmt.Fprintln(out, "consume's Fetch(1) is publish to receipt on an open stream. floor and floor-consume are a pass-through")
	fmt.Fprintln(out, "gateway in its own process (nats.go straight to gRPC, no leases, no tokens, no checks): the limit here.")
	fmt.Fprintln(out, "push runs the pusher (a jetgate replica) and the endpoint in processes of their own; its gateway CPU is")
	fmt.Fprintln(out, "the pusher's, endpoint CPU the endpoint's, and its Fetch(1) is publish to the endpoint. push-floor is a")
	fmt.Fprintln(out, "pass-through pusher in its own process (nats.go Consume, net/http POST, fire-and-forget +ACK).")
	if len(rep.Ratios) > 0 {
		fmt.Fprintln(out)
	}
	for _, r := range rep.Ratios {
		fmt.Fprintf(out, "%s %-7s / %-11s %5.2f  (target >= %g)\n", r.Name, r.Of, r.Over, r.Value, r.Target)
	}
	if d := rep.Fetch1Added; d != nil {
		fmt.Fprintf(out, "Fetch(1) p50 added by jetgate (grpc - nats): %s  (target <= %s)\n", ms(*d), ms(fetch1AddedTarget))
	}
	for _, s := range rep.Shares {
		fmt.Fprintf(out, "%-7s over nats: %+.2f CPU s/100k, %+.0f B/msg, %+.1f allocs/msg\n", s.Mode, s.CPUPer100k, s.BytesPerMsg, s.AllocsPerMsg)
	}
}

func (rep *Report) writeJSON(file string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(b, '\n'), 0o644)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond)) }

// thousands formats v rounded, with commas: 12,345.
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}
