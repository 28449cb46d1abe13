package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// gatewayMode consumes through jetgate: gRPC Fetch+Ack, REST fetch+ack, or
// a Consume stream per worker acked with the unary Ack.
type gatewayMode struct {
	name string
	kind string // the client: ModeGRPC, ModeREST or ModeConsume
	cons jetgatev1.ConsumerServiceClient
	js   jetstream.JetStream // nil when the bench has no NATS URL
	o    Options
	hc   *http.Client // rest
	one  client       // the Fetch(1) client, made on first use
	// closing, if set, releases what the mode started (the floor's process).
	closing func()
	pid     int // the floor's process, 0 for jetgate
}

func (m *gatewayMode) gatewayPID() int { return m.pid }

// client is one way of calling Fetch and Ack.
type client interface {
	fetch(ctx context.Context) ([]string, error)
	ack(ctx context.Context, tokens []string) error
}

func newGatewayMode(name string, cons jetgatev1.ConsumerServiceClient, js jetstream.JetStream, o Options) *gatewayMode {
	m := &gatewayMode{name: name, kind: name, cons: cons, js: js, o: o}
	if name == ModeREST {
		// Enough idle connections for every worker: the default two would
		// have the others dial afresh for each call.
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = o.Workers + 1
		m.hc = &http.Client{Timeout: 30 * time.Second, Transport: t}
	}
	return m
}

func (m *gatewayMode) newClient(o Options, credit int) client {
	switch m.kind {
	case ModeREST:
		return &restClient{base: "http://" + o.HTTPAddr, o: o, hc: m.hc}
	case ModeConsume:
		return &streamClient{c: m.cons, o: o, credit: credit}
	}
	return grpcClient{m.cons, o}
}

func (m *gatewayMode) newWorker() worker { return roundTrip{m.newClient(m.o, 2*m.o.Batch)} }

func (m *gatewayMode) drained() error { return nil }

// settledDown waits, up to settleDownLimit, until jetgate's consumer has no
// pull waiting on the server: the workers' Consume streams were closed with
// their last pulls open, and a message that went to one of those would be
// an orphan (handed on or nak'ed back), not a Fetch(1) with a message ready.
func (m *gatewayMode) settledDown(ctx context.Context) error {
	if m.js == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, settleDownLimit)
	defer cancel()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		c, err := m.js.Consumer(ctx, m.o.Stream, m.o.Consumer)
		switch {
		case ctx.Err() != nil:
			return nil // measure as it is
		case err != nil:
			return fmt.Errorf("jetgate's consumer: %w", err)
		case c.CachedInfo().NumWaiting == 0:
			return nil
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// fetchOne times a Fetch(1), or for consume the time from publishing to
// receiving on an open stream with a credit of one.
func (m *gatewayMode) fetchOne(ctx context.Context, pub func(context.Context) error) (time.Duration, error) {
	if m.one == nil {
		o := m.o
		o.Batch = 1
		m.one = m.newClient(o, 1)
		if s, ok := m.one.(*streamClient); ok {
			if err := s.open(ctx); err != nil {
				return 0, err
			}
		}
	}
	var t0 time.Time
	if m.kind == ModeConsume {
		t0 = time.Now()
	}
	if err := pub(ctx); err != nil {
		return 0, err
	}
	if m.kind != ModeConsume {
		t0 = time.Now()
	}
	var toks []string
	for len(toks) == 0 { // an empty Fetch, or a consume stream's heartbeat
		if time.Since(t0) > fetchOneLimit {
			return 0, fmt.Errorf("the message published was not delivered in %v", fetchOneLimit)
		}
		var err error
		if toks, err = m.one.fetch(ctx); err != nil {
			return 0, err
		}
	}
	d := time.Since(t0)
	return d, m.one.ack(ctx, toks)
}

func (m *gatewayMode) close() {
	if c, ok := m.one.(io.Closer); ok {
		c.Close()
	}
	if m.hc != nil {
		m.hc.CloseIdleConnections()
	}
	if m.closing != nil {
		m.closing()
	}
}

// roundTrip makes a worker of a client: a Fetch, then one Ack of the batch.
type roundTrip struct{ client }

func (r roundTrip) round(ctx context.Context, took func(int)) error {
	toks, err := r.fetch(ctx)
	if err == nil && len(toks) > 0 {
		err = r.ack(ctx, toks)
	}
	if err == nil && len(toks) > 0 {
		took(len(toks))
	}
	return err
}

// Close closes the client if it holds a stream.
func (r roundTrip) Close() error {
	if c, ok := r.client.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// streamClient takes its batches from a Consume stream of its own (credit
// of twice the batch) and acks them with the unary Ack.
type streamClient struct {
	c      jetgatev1.ConsumerServiceClient
	o      Options
	credit int
	st     grpc.ServerStreamingClient[jetgatev1.ConsumeResponse]
	cancel context.CancelFunc
}

func (s *streamClient) open(ctx context.Context) error {
	sctx, cancel := context.WithCancel(ctx)
	st, err := s.c.Consume(sctx, &jetgatev1.ConsumeRequest{Stream: s.o.Stream, Consumer: s.o.Consumer,
		MaxMessages: int32(s.credit), Heartbeat: durationpb.New(time.Second)})
	if err != nil {
		cancel()
		return err
	}
	s.st, s.cancel = st, cancel
	return nil
}

func (s *streamClient) fetch(ctx context.Context) ([]string, error) {
	if s.st == nil {
		if err := s.open(ctx); err != nil {
			return nil, err
		}
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
