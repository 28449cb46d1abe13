package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// PushFloorEnv makes a child process of the bench the pass-through pusher:
// nats.go Consume on a durable of its own, each message POSTed with
// net/http by one of concurrency workers, and a fire-and-forget +ACK once
// the endpoint answers 2xx (a Nak otherwise). No lease, no signature, no
// header but Content-Type, no metric: no pusher can do less, so it is the
// floor under push. With a batch, one goroutine gathers the messages into
// batches as jetgate's pusher does (up to Batch, waiting at most
// floorBatchWait), and each is POSTed as one JSON array of {"id", "data"}.
const PushFloorEnv = "JETGATE_BENCH_PUSH_FLOOR"

// floorBatchWait is the floor's max_wait, push.batch's default.
const floorBatchWait = 20 * time.Millisecond

// ModePushFloor is push's client against the pass-through pusher.
const ModePushFloor = "push-floor"

type pushFloorConfig struct {
	NATSURL     string `json:"nats_url"`
	Stream      string `json:"stream"`
	Consumer    string `json:"consumer"` // jetgate's, whose configuration the durable copies
	Durable     string `json:"durable"`
	Subject     string `json:"subject"`
	URL         string `json:"url"`
	Concurrency int    `json:"concurrency"`
	HTTP2       bool   `json:"http2,omitempty"` // h2c with prior knowledge
	// Batch, if set, sends up to that many messages a request; the durable
	// then has MaxAckPending, as jetgate's pushed consumer has.
	Batch         int    `json:"batch,omitempty"`
	MaxAckPending int    `json:"max_ack_pending,omitempty"`
	CPUProfile    string `json:"cpu_profile,omitempty"`
	BlockProfile  string `json:"block_profile,omitempty"`
	MutexProfile  string `json:"mutex_profile,omitempty"`
}

// startPushFloor starts the pass-through pusher process.
func startPushFloor(cfg pushFloorConfig, command []string) (*replicaProc, error) {
	b, _ := json.Marshal(cfg)
	p, err := startChild(command, PushFloorEnv, string(b))
	if err != nil {
		return nil, fmt.Errorf("push floor: %w", err)
	}
	if _, err := p.readLine(replicaStartLimit); err != nil {
		return nil, fmt.Errorf("push floor did not start: %w (%v)", err, p.stop())
	}
	return p, nil
}

// pushFloorGo on the child's stdin starts its Consume: the bench publishes
// the backlog first, as it pauses push's consumer meanwhile (a paused
// consumer would leave nats.go's pulls to expire).
const pushFloorGo = "go"

// servePushFloor is the pass-through pusher process's side: it says ready
// once its durable is bound, starts pushing on pushFloorGo and stops when
// in closes.
func servePushFloor(ctx context.Context, cfg string, in io.Reader, out io.Writer) error {
	var c pushFloorConfig
	if err := json.Unmarshal([]byte(cfg), &c); err != nil {
		return fmt.Errorf("%s: %w", PushFloorEnv, err)
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
	nc, err := nats.Connect(c.NATSURL, nats.Name("jetgate-bench-push-floor"))
	if err != nil {
		return err
	}
	defer nc.Close()
	m := &natsMode{nc: nc, stream: c.Stream, name: c.Durable, maxAckPending: c.MaxAckPending}
	if err := m.bind(ctx, c.Subject, Options{Stream: c.Stream, Consumer: c.Consumer}); err != nil {
		return err
	}
	tr := &http.Transport{MaxIdleConns: c.Concurrency + 1, MaxIdleConnsPerHost: c.Concurrency + 1}
	if c.HTTP2 {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	pull := 4 * c.Concurrency
	msgs := make(chan jetstream.Msg, c.Concurrency)
	var wg sync.WaitGroup
	if c.Batch > 0 {
		pull, msgs = max(pull, c.MaxAckPending), make(chan jetstream.Msg, c.Concurrency*c.Batch)
		batches := make(chan []jetstream.Msg, c.Concurrency)
		wg.Go(func() { gather(msgs, batches, c.Batch, floorBatchWait) })
		for range c.Concurrency {
			wg.Go(func() {
				for b := range batches {
					floorPushBatch(hc, c.URL, b)
				}
			})
		}
	} else {
		for range c.Concurrency {
			wg.Go(func() {
				for msg := range msgs {
					floorPush(hc, c.URL, msg)
				}
			})
		}
	}
	defer wg.Wait()
	defer close(msgs)
	fmt.Fprintln(out, "ready")
	lines := bufio.NewScanner(in)
	for lines.Scan() { // until the parent closes in
		if lines.Text() != pushFloorGo {
			continue
		}
		// Pulls of 4 × concurrency: with concurrency alone, nats.go's
		// Consume stalled on "no heartbeat received" now and then on a
		// loaded machine, the server holding no pull of it.
		cc, err := m.cons.Consume(func(msg jetstream.Msg) { msgs <- msg }, jetstream.PullMaxMessages(pull),
			jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) { fmt.Fprintln(os.Stderr, "push floor:", err) }))
		if err != nil {
			return err
		}
		defer func() { cc.Drain(); <-cc.Closed() }()
	}
	return nil
}

// floorPush POSTs msg and acks it on a 2xx, else naks it.
func floorPush(hc *http.Client, url string, msg jetstream.Msg) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(msg.Data()))
	if err != nil {
		_ = msg.Term()
		return
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := hc.Do(req)
	if err != nil {
		_ = msg.Nak()
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		_ = msg.Ack()
	} else {
		_ = msg.Nak()
	}
}

// gather puts the messages into batches of up to n, each sent once full or
// once its first message has waited wait, until msgs closes.
func gather(msgs <-chan jetstream.Msg, batches chan<- []jetstream.Msg, n int, wait time.Duration) {
	defer close(batches)
	timer := time.NewTimer(wait)
	timer.Stop()
	for first := range msgs {
		b := append(make([]jetstream.Msg, 0, n), first)
		timer.Reset(wait)
	fill:
		for len(b) < n {
			select {
			case msg, ok := <-msgs:
				if !ok {
					break fill
				}
				b = append(b, msg)
			case <-timer.C:
				break fill
			}
		}
		timer.Stop()
		batches <- b
	}
}

// floorPushBatch POSTs the messages as one JSON array of {"id", "data"}
// (the data in base64) and acks each on a 2xx, else naks each.
func floorPushBatch(hc *http.Client, url string, msgs []jetstream.Msg) {
	body := []byte{'['}
	for i, msg := range msgs {
		if i > 0 {
			body = append(body, ',')
		}
		var (
			stream string
			seq    uint64
		)
		if md, err := msg.Metadata(); err == nil {
			stream, seq = md.Stream, md.Sequence.Stream
		}
		body = append(append(append(body, `{"id":"`...), stream...), '.')
		body = strconv.AppendUint(body, seq, 10)
		body = append(body, `","data":"`...)
		body = base64.StdEncoding.AppendEncode(body, msg.Data())
		body = append(body, `"}`...)
	}
	body = append(body, ']')
	ok := false
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Jetgate-Batch-Size", strconv.Itoa(len(msgs)))
		var resp *http.Response
		if resp, err = hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			_ = resp.Body.Close()
			ok = resp.StatusCode/100 == 2
		}
	}
	for _, msg := range msgs {
		if ok {
			_ = msg.Ack()
		} else {
			_ = msg.Nak()
		}
	}
}
