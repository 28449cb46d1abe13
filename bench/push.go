package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// EndpointEnv makes a child process of the bench the push mode's endpoint:
// it answers every push 204 at once, counts the messages (a batch, which
// has a Jetgate-Batch-Size header, is read as the JSON array it is), and
// answers GET /wait?count=N once N have come, with the count. It speaks
// HTTP/1.1 and h2c.
const EndpointEnv = "JETGATE_BENCH_ENDPOINT"

// DefaultPushConcurrency is the push mode's requests in flight, per replica.
const DefaultPushConcurrency = 64

// pushMode measures push delivery: a replica process pushes a consumer of
// its own (the mode's subject) to an endpoint process. The consumer is
// paused while the mode's messages are published and resumed as the timed
// part starts, so that it consumes a backlog as the other modes do.
type pushMode struct {
	js       jetstream.JetStream
	o        Options
	endpoint *endpointProc
	pusher   *replicaProc // a jetgate replica, or the pass-through pusher
	floor    bool         // the pass-through pusher
	name     string       // the pushed consumer
	resume   sync.Once
	seen     atomic.Int64 // pushes counted by the workers
	hc       *http.Client
}

// newPushMode starts the endpoint and the pusher of mode: ModePush's, a
// jetgate replica, or ModePushFloor's, the pass-through pusher.
func newPushMode(ctx context.Context, mode string, js jetstream.JetStream, subject string, o Options) (*pushMode, error) {
	if js == nil {
		return nil, fmt.Errorf("the %s mode needs the NATS server (--nats-url)", mode)
	}
	ep, err := startEndpoint(o.ReplicaCommand)
	if err != nil {
		return nil, err
	}
	m := &pushMode{js: js, o: o, endpoint: ep, name: o.Consumer + "-" + mode,
		hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.Workers + 2}}}
	url, concurrency := "http://"+ep.addr+"/push", cmp.Or(o.PushConcurrency, DefaultPushConcurrency)
	// Batching, each worker may hold a batch: the pusher and the floor
	// alike may lease that many.
	maxAckPending := max(1024, concurrency*o.PushBatch)
	if m.floor = mode == ModePushFloor; m.floor {
		cfg := pushFloorConfig{
			NATSURL: o.NATSURL, Stream: o.Stream, Consumer: o.Consumer, Durable: m.name, Subject: subject,
			URL: url, Concurrency: concurrency, HTTP2: o.PushHTTP2, CPUProfile: profileFile(o.CPUProfile, "pusher-floor"),
			BlockProfile: profileFile(o.BlockProfile, "pusher-floor"), MutexProfile: profileFile(o.MutexProfile, "pusher-floor"),
		}
		if o.PushBatch > 0 {
			cfg.Batch, cfg.MaxAckPending = o.PushBatch, maxAckPending
		}
		m.pusher, err = startPushFloor(cfg, o.ReplicaCommand)
	} else {
		m.pusher, err = startReplica(o.ReplicaCommand, replicaConfig{
			NATSURL: o.NATSURL, Stream: o.Stream, Consumer: m.name, Subject: subject,
			MaxAckPending: maxAckPending, AckWait: 30 * time.Second,
			PushURL: url, PushConcurrency: concurrency, PushHTTP2: o.PushHTTP2, PushBatch: o.PushBatch,
			CPUProfile:   profileFile(o.CPUProfile, "pusher"),
			BlockProfile: profileFile(o.BlockProfile, "pusher"), MutexProfile: profileFile(o.MutexProfile, "pusher"),
		})
	}
	if err != nil {
		m.close()
		return nil, err
	}
	return m, nil
}

// start has the pusher take the backlog: push's consumer is resumed, the
// pass-through pusher starts its Consume.
func (m *pushMode) start(ctx context.Context) error {
	if m.floor {
		_, err := fmt.Fprintln(m.pusher.stdin, pushFloorGo)
		return err
	}
	_, err := m.js.ResumeConsumer(ctx, m.o.Stream, m.name)
	return err
}

// gatewayPID is the pusher's process.
func (m *pushMode) gatewayPID() int { return m.pusher.cmd.Process.Pid }

// endpointPID is the endpoint's process.
func (m *pushMode) endpointPID() int { return m.endpoint.proc.cmd.Process.Pid }

// settledDown pauses the consumer before the mode's messages are published;
// before the Fetch(1) samples it is running again.
func (m *pushMode) settledDown(ctx context.Context) error {
	if m.seen.Load() > 0 || m.floor { // the floor's Consume waits for start
		return nil
	}
	_, err := m.js.PauseConsumer(ctx, m.o.Stream, m.name, time.Now().Add(time.Hour))
	return err
}

func (m *pushMode) newWorker() worker { return pushWorker{m} }

func (m *pushMode) drained() error { return nil }

// pushWorker waits for the endpoint's count to move and reports what came.
type pushWorker struct{ m *pushMode }

func (w pushWorker) round(ctx context.Context, took func(int)) error {
	m := w.m
	var err error
	m.resume.Do(func() { err = m.start(ctx) })
	if err != nil {
		return err
	}
	old := m.seen.Load()
	n, err := m.wait(ctx, old+1)
	if err != nil {
		return err
	}
	if n > old && m.seen.CompareAndSwap(old, n) {
		took(int(n - old))
	}
	return nil
}

// wait asks the endpoint for its count once it has n.
func (m *pushMode) wait(ctx context.Context, n int64) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.endpoint.addr+"/wait?count="+strconv.FormatInt(n, 10), nil)
	if err != nil {
		return 0, err
	}
	resp, err := m.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var got int64
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		return 0, err
	}
	return got, nil
}

// fetchOne publishes one message and times it to the endpoint.
func (m *pushMode) fetchOne(ctx context.Context, pub func(context.Context) error) (time.Duration, error) {
	n := m.seen.Load() + 1
	start := time.Now()
	if err := pub(ctx); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, fetchOneLimit)
	defer cancel()
	for {
		got, err := m.wait(ctx, n)
		if err != nil {
			return 0, err
		}
		if got >= n {
			m.seen.Store(got)
			return time.Since(start), nil
		}
	}
}

func (m *pushMode) close() {
	if m.pusher != nil {
		_ = m.pusher.stop()
	}
	m.endpoint.stop()
	m.hc.CloseIdleConnections()
	_ = m.js.DeleteConsumer(context.Background(), m.o.Stream, m.name)
}

// endpointProc is the endpoint child, seen from the bench.
type endpointProc struct {
	proc *replicaProc
	addr string
}

func startEndpoint(command []string) (*endpointProc, error) {
	p, err := startChild(command, EndpointEnv, "1")
	if err != nil {
		return nil, fmt.Errorf("push endpoint: %w", err)
	}
	line, err := p.readLine(replicaStartLimit)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("push endpoint did not start: %w", err), p.stop())
	}
	return &endpointProc{proc: p, addr: line}, nil
}

func (e *endpointProc) stop() { _ = e.proc.stop() }

// serveEndpoint is the endpoint child's side: it prints its address and
// serves until in closes.
func serveEndpoint(in io.Reader, out io.Writer) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var (
		mu    sync.Mutex
		count int64
		more  = make(chan struct{})
	)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /push", func(w http.ResponseWriter, r *http.Request) {
		n := int64(1)
		if r.Header.Get("Jetgate-Batch-Size") != "" {
			var batch []json.RawMessage
			if err := json.NewDecoder(r.Body).Decode(&batch); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			n = int64(len(batch))
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
		mu.Lock()
		count += n
		close(more)
		more = make(chan struct{})
		mu.Unlock()
	})
	mux.HandleFunc("GET /wait", func(w http.ResponseWriter, r *http.Request) {
		want, _ := strconv.ParseInt(r.URL.Query().Get("count"), 10, 64)
		limit := time.After(10 * time.Second)
		for {
			mu.Lock()
			n, ch := count, more
			mu.Unlock()
			if n >= want {
				_ = json.NewEncoder(w).Encode(n)
				return
			}
			select {
			case <-ch:
			case <-limit:
				_ = json.NewEncoder(w).Encode(n)
				return
			case <-r.Context().Done():
				return
			}
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true) // h2c with prior knowledge, for --push-http2
	go func() { _ = srv.Serve(l) }()
	fmt.Fprintln(out, l.Addr().String())
	_, _ = io.Copy(io.Discard, in) // until the parent closes it
	return srv.Close()
}
