package server_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
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
	data := bytes.Repeat([]byte("d"), int(h.nc.MaxPayload()))
	if _, err := h.strm.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: stream, Subject: "orders.full", Data: data}); err != nil {
		t.Fatalf("a message of exactly max_payload (%d bytes): %v", len(data), err)
	}
}
