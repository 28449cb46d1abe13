package server_test

import (
	"context"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

const (
	stream   = "ORDERS"
	consumer = "billing"
	other    = "audit" // a second consumer on the same stream
)

type config struct {
	ackWait       time.Duration
	maxAckPending int
	keys          *token.Keyring
	maxFetchBytes int64
	// onServer runs on the server before the harness's stream is made.
	onServer func(*natsserver.Server)
	memory   bool // the stream is held in memory (inMemory)
}

// harness is one real NATS server and one gateway served over gRPC on a
// random port.
type harness struct {
	t    *testing.T
	ns   *natsserver.Server
	nc   *nats.Conn // the test's own connection, for publishing and peeking
	js   jetstream.JetStream
	cfg  config
	gw   *replica.Replica
	cons jetgatev1.ConsumerServiceClient
	strm jetgatev1.StreamServiceClient
}

func newHarness(t *testing.T, opts ...func(*config)) *harness {
	t.Helper()
	cfg := config{ackWait: 30 * time.Second, maxAckPending: 1024, keys: token.RandomKeyring()}
	for _, o := range opts {
		o(&cfg)
	}
	ns := natstest.Start(t)
	if cfg.onServer != nil {
		cfg.onServer(ns)
	}
	nc := natstest.Connect(t, ns)
	if cfg.memory {
		natstest.MemoryStream(t, nc, stream, "orders.>")
	} else {
		natstest.Stream(t, nc, stream, "orders.>")
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, ns: ns, nc: nc, js: js, cfg: cfg}
	h.gw, h.cons, h.strm = h.startGateway()
	return h
}

func ackWait(d time.Duration) func(*config)   { return func(c *config) { c.ackWait = d } }
func maxAckPending(n int) func(*config)       { return func(c *config) { c.maxAckPending = n } }
func withKeys(k *token.Keyring) func(*config) { return func(c *config) { c.keys = k } }
func maxFetchBytes(n int64) func(*config)     { return func(c *config) { c.maxFetchBytes = n } }

// inMemory holds the harness's stream in memory, for a test that reads the
// consumer's delivered count after a reset (natstest.MemoryStream says why).
func inMemory(c *config) { c.memory = true }

// onServer sets up the server before the harness's stream is made.
func onServer(f func(*natsserver.Server)) func(*config) { return func(c *config) { c.onServer = f } }

// startGateway starts one more gateway replica on the harness's server,
// with its own NATS connection and gRPC server.
func (h *harness) startGateway() (*replica.Replica, jetgatev1.ConsumerServiceClient, jetgatev1.StreamServiceClient) {
	h.t.Helper()
	return h.startGatewayWith(nil)
}

// startGatewayWith starts a replica as startGateway does, its metrics in
// reg.
func (h *harness) startGatewayWith(reg prometheus.Registerer) (*replica.Replica, jetgatev1.ConsumerServiceClient, jetgatev1.StreamServiceClient) {
	h.t.Helper()
	g := gwtest.Start(h.t, replica.Options{
		Metrics: reg,
		Conn:    natstest.Connect(h.t, h.ns),
		Consumers: []coreconsumer.Config{
			{Stream: stream, Name: consumer, AckWait: h.cfg.ackWait, MaxAckPending: h.cfg.maxAckPending},
			{Stream: stream, Name: other, AckWait: h.cfg.ackWait, MaxAckPending: h.cfg.maxAckPending},
		},
		Keys:          h.cfg.keys,
		MaxFetchBytes: h.cfg.maxFetchBytes,
	})
	return g.Replica, g.Consumers, g.Streams
}

func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	h.t.Cleanup(cancel)
	return ctx
}

// publish stores n messages on orders.test and returns their sequences.
func (h *harness) publish(n int) []uint64 {
	h.t.Helper()
	var seqs []uint64
	for i := 0; i < n; i++ {
		ack, err := h.js.Publish(h.ctx(), "orders.test", []byte{byte(i)})
		if err != nil {
			h.t.Fatalf("publish: %v", err)
		}
		seqs = append(seqs, ack.Sequence)
	}
	return seqs
}

func (h *harness) fetch(c jetgatev1.ConsumerServiceClient, name string, batch int32, expires time.Duration) *jetgatev1.FetchResponse {
	h.t.Helper()
	resp, err := c.Fetch(h.ctx(), &jetgatev1.FetchRequest{
		Stream: stream, Consumer: name, Batch: batch, Expires: durationpb.New(expires),
	})
	if err != nil {
		h.t.Fatalf("fetch: %v", err)
	}
	return resp
}

// fetchOne fetches from the main consumer and expects exactly one message.
func (h *harness) fetchOne(expires time.Duration) *jetgatev1.Message {
	h.t.Helper()
	resp := h.fetch(h.cons, consumer, 1, expires)
	if len(resp.GetMessages()) != 1 {
		h.t.Fatalf("fetch: got %d messages (empty reason %v), want 1", len(resp.GetMessages()), resp.GetEmptyReason())
	}
	return resp.GetMessages()[0]
}

func (h *harness) info(name string) *jetstream.ConsumerInfo {
	h.t.Helper()
	c, err := h.js.Consumer(h.ctx(), stream, name)
	if err != nil {
		h.t.Fatal(err)
	}
	ci, err := c.Info(h.ctx())
	if err != nil {
		h.t.Fatal(err)
	}
	return ci
}

// tap records every settle that reaches the server for the consumer.
type tap struct {
	sub  *nats.Subscription
	msgs chan *nats.Msg
}

func (h *harness) tap() *tap {
	h.t.Helper()
	tp := &tap{msgs: make(chan *nats.Msg, 1024)}
	sub, err := h.nc.ChanSubscribe("$JS.ACK."+stream+"."+consumer+".>", tp.msgs)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.nc.Flush(); err != nil {
		h.t.Fatal(err)
	}
	tp.sub = sub
	h.t.Cleanup(func() { _ = sub.Unsubscribe() })
	return tp
}

// next returns the next settle seen on the wire.
func (tp *tap) next(t *testing.T) *nats.Msg {
	t.Helper()
	select {
	case m := <-tp.msgs:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no settle seen on the wire")
		return nil
	}
}

// waitUntil blocks until the wall clock passes at.
func waitUntil(at time.Time) {
	if d := time.Until(at); d > 0 {
		<-time.After(d)
	}
}
