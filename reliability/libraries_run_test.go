package reliability

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// libPublisher publishes each library's messages straight to NATS, with a
// msg id so that its retries through NATS restarts are safe, and keeps the
// stream sequence of each.
type libPublisher struct {
	js   jetstream.JetStream
	mu   sync.Mutex
	seqs map[string][]uint64 // by library name
	n    int
}

func (p *libPublisher) run(ctx context.Context, libs []library, n int, gap time.Duration) {
	for i := 0; i < n; i++ {
		for _, l := range libs {
			id := l.consumer + "-" + strconv.Itoa(i)
			for ctx.Err() == nil {
				pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				ack, err := p.js.Publish(pctx, "orders."+l.consumer, []byte(id), jetstream.WithMsgID(id))
				cancel()
				if err == nil {
					p.mu.Lock()
					p.seqs[l.name] = append(p.seqs[l.name], ack.Sequence)
					p.n++
					p.mu.Unlock()
					break
				}
				backoff(ctx, 50*time.Millisecond)
			}
		}
		backoff(ctx, gap)
	}
}

func (p *libPublisher) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

func (p *libPublisher) published() map[string][]uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string][]uint64, len(p.seqs))
	for k, v := range p.seqs {
		out[k] = append([]uint64(nil), v...)
	}
	return out
}

// libProcess is a library's subscriber process: its log of handler runs,
// and, once stopped, the counters it printed.
type libProcess struct {
	lib     library
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stdout  bytes.Buffer
	log     string
	stderr  string
	summary string
}

func startLibrary(t *testing.T, l library, address string) *libProcess {
	t.Helper()
	dir := t.TempDir()
	p := &libProcess{lib: l, log: filepath.Join(dir, "handlers.jsonl"), stderr: filepath.Join(dir, "stderr")}
	p.cmd = l.command(address, p.log)
	errFile, err := os.Create(p.stderr)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, errFile
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
		_ = errFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(p.stderr)
			t.Logf("%s subscriber's stderr (last 2000 bytes): %s", l.name, tail(b, 2000))
		}
	})
	return p
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// stop closes the process's stdin (it closes its subscriber, draining) and
// waits for it to exit.
func (p *libProcess) stop(t *testing.T) {
	t.Helper()
	_ = p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s subscriber: %v", p.lib.name, err)
		}
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		t.Errorf("%s subscriber did not close within 60s", p.lib.name)
		<-done
	}
	p.summary = string(bytes.TrimSpace(p.stdout.Bytes()))
}

// stats are the counters the stopped process printed.
func (p *libProcess) stats() map[string]float64 {
	var out struct {
		Stats map[string]float64 `json:"stats"`
	}
	_ = json.Unmarshal([]byte(p.summary), &out)
	return out.Stats
}

// handlerRun is a line of a library's log.
type handlerRun struct {
	Ev       string `json:"ev"`
	Seq      uint64 `json:"seq"`
	Delivery uint64 `json:"delivery"`
	T        int64  `json:"t"` // unix ms
	Outcome  string `json:"outcome"`
	Reason   string `json:"reason"`
	Detail   string `json:"detail"`
}

type libVerdict struct {
	runs, raised, ackFailed int
	refusals                map[string]int // the reasons of the acks refused
	lost                    []uint64       // published, no handler run finished with an ack
	// ambiguous are published messages whose handlers finished but whose
	// acks all failed, and that never came back: the ack took after all
	// (the replica died with it, say), as the drained consumer shows.
	ambiguous []uint64
	// ambiguousBy counts the ambiguous by how their last ack failed.
	ambiguousBy map[string]int
	overlap     []string // a handler started while another ran the message
	ackedAgain  []string // a handler started after the message's ack was confirmed
}

// verdict reads the log so far against the published sequences.
func (p *libProcess) verdict(published []uint64) libVerdict {
	var v libVerdict
	f, err := os.Open(p.log)
	if err != nil {
		v.lost = published
		return v
	}
	defer f.Close()
	running := make(map[uint64]int)
	acked, maybe := make(map[uint64]bool), make(map[uint64]string)
	history := make(map[uint64][]string) // what each message's handlers did, for a report
	v.refusals, v.ambiguousBy = make(map[string]int), make(map[string]int)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r handlerRun
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue // a line being written
		}
		history[r.Seq] = append(history[r.Seq], fmt.Sprintf("%s %s of delivery %d %s %s", clock(time.UnixMilli(r.T)), r.Ev, r.Delivery, r.Outcome, r.Reason))
		switch r.Ev {
		case "start":
			v.runs++
			if running[r.Seq] > 0 {
				v.overlap = append(v.overlap, fmt.Sprintf("seq %d: delivery %d started while %d handler(s) ran it", r.Seq, r.Delivery, running[r.Seq]))
			}
			if acked[r.Seq] {
				v.ackedAgain = append(v.ackedAgain, fmt.Sprintf("seq %d: delivery %d after its ack was confirmed: %s", r.Seq, r.Delivery,
					strings.Join(history[r.Seq], "; ")))
			}
			running[r.Seq]++
		case "end":
			running[r.Seq]--
			switch r.Outcome {
			case "acked":
				acked[r.Seq] = true
			case "raised":
				v.raised++
			case "ack_failed":
				v.ackFailed++
				v.refusals[r.Reason]++
				maybe[r.Seq] = r.Reason
				if r.Detail != "" && r.Detail != r.Reason {
					maybe[r.Seq] += ": " + r.Detail
				}
			}
		}
	}
	for _, s := range published {
		switch {
		case acked[s]:
		case maybe[s] != "":
			v.ambiguous = append(v.ambiguous, s)
			v.ambiguousBy[maybe[s]]++
		default:
			v.lost = append(v.lost, s)
		}
	}
	return v
}

// assertConsumerDrained checks a consumer on the server: nothing pending,
// nothing awaiting an ack.
func assertConsumerDrained(t *testing.T, nc *nats.Conn, name string) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var ci *jetstream.ConsumerInfo
	ok := waitFor(context.Background(), 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		c, err := js.Consumer(ctx, stream, name)
		if err == nil {
			ci, err = c.Info(ctx)
		}
		return err == nil && ci.NumAckPending == 0 && ci.NumPending == 0
	})
	if !ok {
		if ci == nil {
			t.Errorf("consumer %s: no info", name)
			return
		}
		t.Errorf("consumer %s not drained: ack pending %d, pending %d; %s", name, ci.NumAckPending, ci.NumPending, leftOn(js, name))
	}
}

// leftOn pulls what a consumer still has, straight from NATS, for a
// failure's log: each message's stream sequence and how often the server
// delivered it.
func leftOn(js jetstream.JetStream, name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := js.Consumer(ctx, stream, name)
	if err != nil {
		return err.Error()
	}
	batch, err := c.Fetch(20, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		return err.Error()
	}
	s := "left on the server:"
	for m := range batch.Messages() {
		if md, err := m.Metadata(); err == nil {
			s += fmt.Sprintf(" seq %d delivered %d times;", md.Sequence.Stream, md.NumDelivered)
		}
	}
	return s
}
