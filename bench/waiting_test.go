package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
)

// TestWaitingReplicaProcess is no test of its own: it is the replica (or
// push endpoint) process that TestRunWaiting and the push mode start, this
// test binary run again with ReplicaEnv (or EndpointEnv) set.
func TestWaitingReplicaProcess(t *testing.T) {
	child := false
	for _, env := range []string{ReplicaEnv, EndpointEnv, NATSEnv, FloorEnv, PushFloorEnv} {
		_, ok := os.LookupEnv(env)
		child = child || ok
	}
	if !child {
		t.Skip("runs only as a child process of the bench")
	}
	if _, err := Run(context.Background(), Options{}); err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// TestRunWaiting runs the waiting measurement small: every caller served,
// evenly, nothing stranded, and the memory figures and JSON there. It
// asserts no speed and no size.
func TestRunWaiting(t *testing.T) {
	o := smallOptions(t)
	o.Waiting, o.Replicas = 200, []int{2}
	o.ReplicaCommand = []string{os.Args[0], "-test.run=^TestWaitingReplicaProcess$"}
	res, err := RunWaiting(t.Context(), o)
	if err != nil {
		t.Fatalf("RunWaiting: %v\n%s", err, o.Out)
	}
	if len(res) != 1 {
		t.Fatalf("%d results; want 1", len(res))
	}
	r := res[0]
	if r.Served != 200 || !slices.Equal(r.ServedPerReplica, []int{100, 100}) || r.Stranded != 0 || r.Redelivered != 0 {
		t.Errorf("served %d (%v), stranded %d, redelivered %d; want 200 (100/100), 0, 0", r.Served, r.ServedPerReplica, r.Stranded, r.Redelivered)
	}
	if r.PullsOpen+r.FetchesQueued != 200 || r.ServerWaiting > r.ConsumerMaxWaiting || r.BytesPerWaiting <= 0 || r.GoroutinesPerWaiting < 1 {
		t.Errorf("while waiting: %+v", r)
	}
	b, err := os.ReadFile(o.JSON)
	if err != nil {
		t.Fatal(err)
	}
	var got WaitingReport
	if err := json.Unmarshal(b, &got); err != nil || len(got.Results) != 1 || got.Results[0].Served != 200 {
		t.Errorf("JSON %s: %v", b, err)
	}
}
