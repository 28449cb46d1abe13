package bench

import (
	"bytes"
	"testing"
	"time"
)

// TestSoakReplicasLibraries soaks two jetgate processes, consumed by the
// Python and the TypeScript libraries' subscribers, at a toy rate. It
// asserts no speed and no flatness: twenty seconds are too few to judge.
func TestSoakReplicasLibraries(t *testing.T) {
	if testing.Short() {
		t.Skip("a 20s soak")
	}
	if _, err := findLibraries([]string{LibraryPython, LibraryTS}); err != nil {
		t.Skipf("both client libraries must run here: %v", err)
	}
	o := smallOptions(t)
	o.InProcess = false
	o.Soak, o.Every, o.Rate = 20*time.Second, 5*time.Second, 100
	o.SoakReplicas, o.SoakLibraries = 2, []string{LibraryPython, LibraryTS}
	res, err := RunSoak(t.Context(), o)
	out := o.Out.(*bytes.Buffer)
	if err != nil {
		t.Fatalf("RunSoak: %v\n%s", err, out)
	}
	t.Logf("\n%s", out)
	if len(res.Subscribers) != 2 {
		t.Fatalf("%d subscribers; want 2", len(res.Subscribers))
	}
	for i, s := range res.Subscribers {
		if s.Library != o.SoakLibraries[i] || s.Replica != i || s.Handled == 0 || s.Final == "" {
			t.Errorf("subscriber %d: %+v; want %s through replica %d, messages handled, its stats", i, s, o.SoakLibraries[i], i)
		}
	}
	if res.Published == 0 || res.Acked < res.Published*9/10 {
		t.Errorf("published %d, acked %d; want at least 90%% acked", res.Published, res.Acked)
	}
	if len(res.Replicas) != 2 {
		t.Fatalf("%d replicas sampled; want 2", len(res.Replicas))
	}
	for i, r := range res.Replicas {
		if len(r.Samples) == 0 {
			t.Errorf("replica %d: no samples", i+1)
		}
	}
	if res.Pending < 0 || res.AckPending < 0 {
		t.Errorf("backlog unknown: pending %d, ack pending %d", res.Pending, res.AckPending)
	}
}
