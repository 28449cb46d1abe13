package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func smallOptions(t *testing.T) Options {
	return Options{Stream: "ORDERS", Consumer: "billing", Subject: "orders.bench", Messages: 300, Batch: 50,
		Workers: 2, Size: 1024, Samples: 3, Modes: AllModes, Out: &bytes.Buffer{}, JSON: filepath.Join(t.TempDir(), "report.json"),
		// the child processes (push's replica and endpoint, the floor,
		// NATS when deployed): this test binary again
		ReplicaCommand: []string{os.Args[0], "-test.run=^TestWaitingReplicaProcess$"}, InProcess: true}
}

// TestRunAllModes runs every mode on a small workload and checks that the
// report has each mode's figures, the ratios and the JSON. It asserts no
// speed.
func TestRunAllModes(t *testing.T) {
	o := smallOptions(t)
	rep, err := Run(t.Context(), o)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, o.Out)
	}
	var modes []string
	for _, r := range rep.Results {
		modes = append(modes, r.Mode)
		if r.Messages != o.Messages || r.Round != 1 || r.MsgsPerSec <= 0 || r.Fetch1.P50 <= 0 || r.BytesPerMsg <= 0 || r.AllocsPerMsg <= 0 {
			t.Errorf("%s: %+v", r.Mode, r)
		}
	}
	if !slices.Equal(modes, AllModes) {
		t.Errorf("modes %v; want %v", modes, AllModes)
	}
	if len(rep.Rounds) != len(AllModes) {
		t.Errorf("%d rounds' figures; want %d", len(rep.Rounds), len(AllModes))
	}
	var names []string
	for _, r := range rep.Ratios {
		names = append(names, r.Name)
	}
	if !slices.Equal(names, []string{"c/a", "c/b", "d/a", "e/a", "f/e", "c/floor", "e/floor", "f/floor"}) || rep.Fetch1Added == nil || len(rep.Shares) != 3 {
		t.Errorf("ratios %v, added latency %v, %d shares", names, rep.Fetch1Added, len(rep.Shares))
	}
	b, err := os.ReadFile(o.JSON)
	if err != nil {
		t.Fatal(err)
	}
	var got Report
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Results) != len(AllModes) || got.Results[2].MsgsPerSec != rep.Results[2].MsgsPerSec {
		t.Errorf("JSON results %+v; want %+v", got.Results, rep.Results)
	}
}

func TestMedian(t *testing.T) {
	r := func(rate float64, p50 time.Duration, cpu float64) Result {
		return Result{Mode: "grpc", Messages: 10, MsgsPerSec: rate, Fetch1: Latency{P50: p50}, CPUPer100k: cpu}
	}
	for _, tc := range []struct {
		name string
		rs   []Result
		want Result
	}{
		{"one round as it is", []Result{r(5, time.Millisecond, 2)}, r(5, time.Millisecond, 2)},
		{"odd: the middle of each figure", []Result{r(9, 3*time.Millisecond, 1), r(5, time.Millisecond, 3), r(7, 2*time.Millisecond, 2)},
			Result{Mode: "grpc", Messages: 10, Rounds: 3, MsgsPerSec: 7, MinMsgsPerSec: 5, MaxMsgsPerSec: 9, Fetch1: Latency{P50: 2 * time.Millisecond}, CPUPer100k: 2}},
		{"even: the mean of the middle two", []Result{r(4, time.Millisecond, 1), r(8, 2*time.Millisecond, 3)},
			Result{Mode: "grpc", Messages: 10, Rounds: 2, MsgsPerSec: 6, MinMsgsPerSec: 4, MaxMsgsPerSec: 8, Fetch1: Latency{P50: 1500 * time.Microsecond}, CPUPer100k: 2}},
	} {
		if got := median(tc.rs); got != tc.want {
			t.Errorf("%s: got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

func TestRunCPUProfile(t *testing.T) {
	o := smallOptions(t)
	o.Modes = []string{ModeGRPC}
	o.CPUProfile = filepath.Join(t.TempDir(), "cpu.out")
	if _, err := Run(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(filepath.Dir(o.CPUProfile), "cpu.grpc.out")); err != nil || fi.Size() == 0 {
		t.Errorf("profile: %v", err)
	}
}

func TestSoak(t *testing.T) {
	o := smallOptions(t)
	o.Soak, o.Rate, o.Every = 2*time.Second, 200, 500*time.Millisecond
	if _, err := Run(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(o.Out.(*bytes.Buffer).Bytes(), []byte("published")) {
		t.Errorf("no soak summary in\n%s", o.Out)
	}
}

// TestRunDeployed runs the default shape: NATS a child process, jetgate the
// built binary, the callers here. It asserts no speed.
func TestRunDeployed(t *testing.T) {
	o := smallOptions(t)
	o.InProcess, o.Modes = false, []string{ModeNATS, ModeGRPC}
	rep, err := Run(t.Context(), o)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, o.Out)
	}
	if rep.Workload.Shape != ShapeDeployed || len(rep.Results) != 2 || rep.Results[1].MsgsPerSec <= 0 {
		t.Fatalf("shape %q, results %+v", rep.Workload.Shape, rep.Results)
	}
}

// TestRunPushBatched runs push and push-floor with batches, and writes the
// pushers' block and mutex profiles. It asserts no speed.
func TestRunPushBatched(t *testing.T) {
	o := smallOptions(t)
	o.Modes, o.PushBatch, o.PushConcurrency = []string{ModePush, ModePushFloor}, 20, 4
	dir := t.TempDir()
	o.BlockProfile, o.MutexProfile = filepath.Join(dir, "block.out"), filepath.Join(dir, "mutex.out")
	rep, err := Run(t.Context(), o)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, o.Out)
	}
	if rep.Workload.PushBatch != 20 || len(rep.Results) != 2 || rep.Results[0].MsgsPerSec <= 0 || rep.Results[1].MsgsPerSec <= 0 {
		t.Fatalf("push batch %d, results %+v", rep.Workload.PushBatch, rep.Results)
	}
	for _, f := range []string{"block.pusher.out", "mutex.pusher.out", "block.pusher-floor.out", "mutex.pusher-floor.out"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
