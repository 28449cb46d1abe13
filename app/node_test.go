package app

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestNodeClientConsumes runs clients/node/consume.mjs, a Node gRPC client
// built from the .proto files alone, against a whole jetgate: it publishes,
// drains a Consume stream and acks every batch. It proves a non-Go client
// can use the streaming Consume, and that what it acked is settled on the
// server. It needs node and npm, and npm ci reaches the package registry, so
// it runs only with JETGATE_NODE=1.
func TestNodeClientConsumes(t *testing.T) {
	if os.Getenv("JETGATE_NODE") != "1" {
		t.Skip("set JETGATE_NODE=1 to run the Node gRPC client test (needs node and npm on PATH, and npm ci reaches the package registry)")
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("JETGATE_NODE=1 but %s is not on PATH: %v", tool, err)
		}
	}
	dir, err := filepath.Abs(filepath.Join("..", "clients", "node"))
	if err != nil {
		t.Fatal(err)
	}

	ciCtx, cancelCI := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancelCI()
	began := time.Now()
	ci := exec.CommandContext(ciCtx, "npm", "ci", "--no-audit", "--no-fund")
	ci.Dir = dir
	if out, err := ci.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
	t.Logf("npm ci took %v", time.Since(began).Round(time.Millisecond))

	const n = 25
	p := start(t, testOptions(t))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	node := exec.CommandContext(ctx, "node", "consume.mjs", p.GRPC, strconv.Itoa(n))
	node.Dir = dir
	node.Stdout, node.Stderr = &stdout, &stderr
	began = time.Now()
	if err := node.Run(); err != nil {
		t.Fatalf("node consume.mjs %s %d: %v\nstdout:\n%s\nstderr:\n%s", p.GRPC, n, err, stdout.String(), stderr.String())
	}
	t.Logf("node consume.mjs took %v: %s", time.Since(began).Round(time.Millisecond), strings.TrimSpace(stdout.String()))

	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var got struct {
		Received   *int `json:"received"`
		Acked      *int `json:"acked"`
		Heartbeats *int `json:"heartbeats"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
		t.Fatalf("node printed %q; want one JSON line: %v", stdout.String(), err)
	}
	if got.Received == nil || got.Acked == nil || got.Heartbeats == nil {
		t.Fatalf("node printed %q; want received, acked and heartbeats", stdout.String())
	}
	if *got.Received != n || *got.Acked != n {
		t.Errorf("node received %d and acked %d; want %d of each", *got.Received, *got.Acked, n)
	}

	// Every Ack was confirmed before it returned, so the consumer is drained
	// now: nothing left to deliver and nothing leased.
	info := consumerInfo(t, p.NATS, "ORDERS", "billing")
	if info.NumAckPending != 0 || info.NumPending != 0 {
		t.Errorf("consumer after the node client: NumAckPending %d, NumPending %d; want 0 and 0",
			info.NumAckPending, info.NumPending)
	}
	if info.Delivered.Stream != n || info.AckFloor.Stream != n {
		t.Errorf("consumer delivered up to stream seq %d, ack floor %d; want %d for both",
			info.Delivered.Stream, info.AckFloor.Stream, n)
	}
}
