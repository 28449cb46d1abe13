package server_test

import (
	"bytes"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

// The shortest ttl, 1s, is sent as the message's Nats-TTL; a message of
// exactly the server's max_payload is taken.
func TestPublishEdges(t *testing.T) {
	h := newHarness(t)
	h.updateStream(func(c *jetstream.StreamConfig) { c.AllowMsgTTL = true })
	r, err := h.strm.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: stream, Subject: "orders.ttl", Data: []byte("x"), Ttl: durationpb.New(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := h.js.Stream(h.ctx(), stream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetMsg(h.ctx(), r.GetSeq())
	if err != nil {
		t.Fatalf("the 1s message: %v", err)
	}
	if got := m.Header.Get(jetstream.MsgTTLHeader); got != "1s" {
		t.Fatalf("Nats-TTL %q, want 1s", got)
	}
	// A small max_payload, so that a message of exactly it is quick to
	// store under load.
	ns := natstest.StartWith(t, &natsserver.Options{MaxPayload: 64 << 10})
	natstest.Stream(t, natstest.Connect(t, ns), stream, "orders.>")
	nc := natstest.Connect(t, ns)
	g := gwtest.Start(t, replica.Options{Conn: nc, Consumers: []coreconsumer.Config{{Stream: stream, Name: consumer}}, Keys: token.RandomKeyring()})
	data := bytes.Repeat([]byte("d"), int(nc.MaxPayload()))
	if _, err := g.Streams.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: stream, Subject: "orders.full", Data: data}); err != nil {
		t.Fatalf("a message of exactly max_payload (%d bytes): %v", len(data), err)
	}
	data = append(data, 'd')
	if _, err := g.Streams.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: stream, Subject: "orders.full", Data: data}); err == nil {
		t.Fatalf("a message of max_payload + 1 bytes was taken")
	}
}
