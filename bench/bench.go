// Package bench measures jetgate's throughput: Fetch(batch) + Ack(batch)
// loops over gRPC and over REST, against a jetgate it starts in-process
// (embedded NATS, random ports) or one already running.
package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/app"
)

// Options configure a run.
type Options struct {
	// GRPCAddr and HTTPAddr name a running jetgate; empty starts one.
	GRPCAddr string
	HTTPAddr string
	Stream   string
	Consumer string
	Subject  string
	Messages int
	Batch    int
	Workers  int
	Size     int
	Modes    []string // "grpc", "rest"
	Out      io.Writer

	// Soak, when set, runs a soak of that length instead of the modes:
	// Rate messages a second, the gateway's /metrics sampled Every.
	Soak  time.Duration
	Rate  int
	Every time.Duration
}

// Result is one mode's figures.
type Result struct {
	Mode     string
	Messages int
	Elapsed  time.Duration
	Fetch    Latency
	Ack      Latency
}

// Latency summarises one RPC's latencies.
type Latency struct{ P50, P99, Max time.Duration }

func (r Result) String() string {
	return fmt.Sprintf("%-4s %d msgs in %v: %.0f msg/s; fetch p50 %v p99 %v; ack p50 %v p99 %v",
		r.Mode, r.Messages, r.Elapsed.Round(time.Millisecond), float64(r.Messages)/r.Elapsed.Seconds(),
		r.Fetch.P50, r.Fetch.P99, r.Ack.P50, r.Ack.P99)
}

// Run measures each mode in turn and prints one line per mode.
func Run(ctx context.Context, o Options) ([]Result, error) {
	if o.GRPCAddr == "" {
		stop, addrs, err := startJetgate(ctx, o)
		if err != nil {
			return nil, err
		}
		defer stop()
		o.GRPCAddr, o.HTTPAddr = addrs.GRPC, addrs.HTTP
	}
	conn, err := grpc.NewClient(o.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	cons := jetgatev1.NewConsumerServiceClient(conn)
	strm := jetgatev1.NewStreamServiceClient(conn)
	if o.Soak > 0 {
		_, err := soak(ctx, cons, strm, o)
		return nil, err
	}
	var results []Result
	for _, mode := range o.Modes {
		if err := publish(ctx, strm, o); err != nil {
			return results, err
		}
		var c func() client
		switch mode {
		case "grpc":
			c = func() client { return grpcClient{cons, o} }
		case "rest":
			rc := &restClient{base: "http://" + o.HTTPAddr, o: o, hc: &http.Client{Timeout: 30 * time.Second}}
			c = func() client { return rc }
		case "consume":
			c = func() client { return &streamClient{c: cons, o: o} }
		default:
			return results, fmt.Errorf("unknown mode %q: use grpc, rest or consume", mode)
		}
		r, err := consume(ctx, mode, c, o)
		if err != nil {
			return results, err
		}
		fmt.Fprintln(o.Out, r)
		results = append(results, r)
	}
	return results, nil
}

// startJetgate runs jetgate in this process with its embedded NATS server,
// on random ports. The stream keeps at most streamMaxMsgs messages (or a
// mode's worth, if more) so that a soak measures the gateway, not a growing
// store.
func startJetgate(ctx context.Context, o Options) (func(), app.Addrs, error) {
	dir, err := os.MkdirTemp("", "jetgate-bench-")
	if err != nil {
		return nil, app.Addrs{}, err
	}
	opts := app.Defaults()
	opts.DataDir = dir
	opts.NATSListen = "127.0.0.1:-1"
	opts.GRPCAddr, opts.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	opts.Stream, opts.Consumer = o.Stream, o.Consumer
	opts.StreamSubjects = []string{o.Subject}
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := app.Start(ctx, opts)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, app.Addrs{}, err
	}
	stop := func() {
		_ = p.Stop()
		_ = os.RemoveAll(dir)
	}
	if err := capStream(ctx, p.NATS, o); err != nil {
		stop()
		return nil, app.Addrs{}, err
	}
	return stop, p.Addrs, nil
}

const streamMaxMsgs = 10_000

func capStream(ctx context.Context, url string, o Options) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	_, err = js.UpdateStream(ctx, jetstream.StreamConfig{Name: o.Stream, Subjects: []string{o.Subject}, MaxMsgs: int64(max(streamMaxMsgs, o.Messages))})
	return err
}

// publish stores the messages to consume, through the gateway's Publish
// (not part of what is measured).
func publish(ctx context.Context, strm jetgatev1.StreamServiceClient, o Options) error {
	data := bytes.Repeat([]byte("x"), o.Size)
	for i := 0; i < o.Messages; i++ {
		if _, err := strm.Publish(ctx, &jetgatev1.PublishRequest{Stream: o.Stream, Subject: o.Subject, Data: data}); err != nil {
			return fmt.Errorf("publish: %w", err)
		}
	}
	return nil
}

// client is one way of calling Fetch and Ack.
type client interface {
	fetch(ctx context.Context) ([]string, error)
	ack(ctx context.Context, tokens []string) error
}

func consume(ctx context.Context, mode string, newClient func() client, o Options) (Result, error) {
	var left atomic.Int64
	left.Store(int64(o.Messages))
	var mu sync.Mutex
	var fetches, acks []time.Duration
	var firstErr error
	var end atomic.Int64 // unix ns when the last message was acked
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < o.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newClient()
			if cl, ok := c.(io.Closer); ok {
				defer cl.Close()
			}
			var f, a []time.Duration
			defer func() {
				mu.Lock()
				fetches, acks = append(fetches, f...), append(acks, a...)
				mu.Unlock()
			}()
			for left.Load() > 0 && ctx.Err() == nil {
				t0 := time.Now()
				toks, err := c.fetch(ctx)
				t1 := time.Now()
				if err == nil && len(toks) > 0 {
					err = c.ack(ctx, toks)
					a = append(a, time.Since(t1))
				}
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
					return
				}
				if len(toks) == 0 {
					continue // the tail: others hold the last messages
				}
				f = append(f, t1.Sub(t0))
				if left.Add(-int64(len(toks))) <= 0 {
					end.CompareAndSwap(0, time.Now().UnixNano())
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return Result{}, fmt.Errorf("%s: %w", mode, firstErr)
	}
	elapsed := time.Unix(0, end.Load()).Sub(start)
	return Result{Mode: mode, Messages: o.Messages, Elapsed: elapsed, Fetch: summarise(fetches), Ack: summarise(acks)}, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func summarise(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[int(q*float64(len(ds)-1))].Round(time.Microsecond) }
	return Latency{P50: at(0.50), P99: at(0.99), Max: ds[len(ds)-1].Round(time.Microsecond)}
}

// streamClient takes its batches from a Consume stream of its own (credit
// of twice the batch) and acks them with the unary Ack.
type streamClient struct {
	c      jetgatev1.ConsumerServiceClient
	o      Options
	st     grpc.ServerStreamingClient[jetgatev1.ConsumeResponse]
	cancel context.CancelFunc
}

func (s *streamClient) fetch(ctx context.Context) ([]string, error) {
	if s.st == nil {
		sctx, cancel := context.WithCancel(ctx)
		st, err := s.c.Consume(sctx, &jetgatev1.ConsumeRequest{Stream: s.o.Stream, Consumer: s.o.Consumer,
			MaxMessages: int32(2 * s.o.Batch), Heartbeat: durationpb.New(time.Second)})
		if err != nil {
			cancel()
			return nil, err
		}
		s.st, s.cancel = st, cancel
	}
	resp, err := s.st.Recv()
	if err != nil {
		return nil, err
	}
	toks := make([]string, len(resp.GetMessages()))
	for i, m := range resp.GetMessages() {
		toks[i] = m.GetToken()
	}
	return toks, nil
}

func (s *streamClient) ack(ctx context.Context, tokens []string) error {
	return grpcClient{s.c, s.o}.ack(ctx, tokens)
}

// Close ends the stream.
func (s *streamClient) Close() error {
	if s.cancel != nil {
		s.cancel()
	}
	return nil
}

type grpcClient struct {
	c jetgatev1.ConsumerServiceClient
	o Options
}

func (g grpcClient) fetch(ctx context.Context) ([]string, error) {
	resp, err := g.c.Fetch(ctx, &jetgatev1.FetchRequest{Stream: g.o.Stream, Consumer: g.o.Consumer, Batch: int32(g.o.Batch), Expires: durationpb.New(time.Second)})
	if err != nil {
		return nil, err
	}
	toks := make([]string, len(resp.GetMessages()))
	for i, m := range resp.GetMessages() {
		toks[i] = m.GetToken()
	}
	return toks, nil
}

func (g grpcClient) ack(ctx context.Context, tokens []string) error {
	resp, err := g.c.Ack(ctx, &jetgatev1.AckRequest{Stream: g.o.Stream, Consumer: g.o.Consumer, Tokens: tokens})
	if err == nil && len(resp.GetFailures()) > 0 {
		err = fmt.Errorf("ack: %d tokens failed, first: %s", len(resp.GetFailures()), resp.GetFailures()[0].GetReason())
	}
	return err
}

type restClient struct {
	base string
	o    Options
	hc   *http.Client
}

func (r *restClient) post(ctx context.Context, verb string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	url := fmt.Sprintf("%s/v1/streams/%s/consumers/%s:%s", r.base, r.o.Stream, r.o.Consumer, verb)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: HTTP %d: %s", verb, resp.StatusCode, msg)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func (r *restClient) fetch(ctx context.Context) ([]string, error) {
	var out struct {
		Messages []struct {
			Token string `json:"token"`
		} `json:"messages"`
	}
	if err := r.post(ctx, "fetch", map[string]any{"batch": r.o.Batch, "expires": "1s"}, &out); err != nil {
		return nil, err
	}
	toks := make([]string, len(out.Messages))
	for i, m := range out.Messages {
		toks[i] = m.Token
	}
	return toks, nil
}

func (r *restClient) ack(ctx context.Context, tokens []string) error {
	var out struct {
		Failures []struct {
			Reason string `json:"reason"`
		} `json:"failures"`
	}
	if err := r.post(ctx, "ack", map[string]any{"tokens": tokens}, &out); err != nil {
		return err
	}
	if len(out.Failures) > 0 {
		return fmt.Errorf("ack: %d tokens failed, first: %s", len(out.Failures), out.Failures[0].Reason)
	}
	return nil
}
