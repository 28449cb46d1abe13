package server_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// publishRaw stores a message as any NATS client may, bytes and all.
func (h *harness) publishRaw(subject string, hdr nats.Header, data string) {
	h.t.Helper()
	if _, err := h.js.PublishMsg(h.ctx(), &nats.Msg{Subject: subject, Header: hdr, Data: []byte(data)}); err != nil {
		h.t.Fatalf("publish %q: %v", subject, err)
	}
}

// wantRaw checks a message whose subject or headers are not UTF-8: the
// strings with U+FFFD for each invalid byte, the exact bytes in raw.
func wantRaw(t *testing.T, m *jetgatev1.Message) {
	t.Helper()
	raw := m.GetRaw()
	if m.GetSubject() != "orders.\uFFFD" || !bytes.Equal(raw.GetSubject(), []byte("orders.\xff")) {
		t.Fatalf("subject %q raw %q", m.GetSubject(), raw.GetSubject())
	}
	if v := m.GetHeaders()["X-Bad"].GetValues(); len(v) != 2 || v[0] != "a\uFFFD\uFFFDb" || v[1] != "ok" {
		t.Fatalf("headers %v", m.GetHeaders())
	}
	var names []string
	for _, rh := range raw.GetHeaders() {
		names = append(names, string(rh.GetName()))
		if string(rh.GetName()) == "X-Bad" && !bytes.Equal(rh.GetValues()[0], []byte("a\xfe\xfeb")) {
			t.Fatalf("raw X-Bad %q", rh.GetValues())
		}
	}
	if len(names) != 2 || names[0] != "X-Bad" || names[1] != "X-Good" {
		t.Fatalf("raw header names %q, want X-Bad, X-Good", names)
	}
}

// A message whose subject or headers are not UTF-8, as any NATS client may
// publish, is delivered with its exact bytes in raw, and the messages around
// it are delivered with it, by Fetch and by Consume.
func TestMessagesThatAreNotUTF8AreDeliveredLosslessly(t *testing.T) {
	h := newHarness(t)
	bad := nats.Header{"X-Bad": {"a\xfe\xfeb", "ok"}, "X-Good": {"yes"}}
	for round := 0; round < 2; round++ {
		h.publish(1)
		h.publishRaw("orders.\xff", bad, "bad")
		h.publish(1)
	}
	ms := h.fetch(h.cons, consumer, 3, time.Second).GetMessages()
	if len(ms) != 3 || ms[0].GetRaw() != nil || ms[2].GetRaw() != nil || string(ms[1].GetData()) != "bad" {
		t.Fatalf("fetch: %v", ms)
	}
	wantRaw(t, ms[1])
	cs := h.consume(h.cons, &jetgatev1.ConsumeRequest{MaxMessages: 10})
	var got []*jetgatev1.Message
	for len(got) < 3 {
		more, _ := cs.next(t, 10*time.Second)
		got = append(got, more...)
	}
	if len(got) != 3 || string(got[1].GetData()) != "bad" {
		t.Fatalf("consume: %v", got)
	}
	wantRaw(t, got[1])
	for _, m := range append(ms, got...) {
		resp, err := h.cons.Ack(context.Background(), &jetgatev1.AckRequest{Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()}})
		if err != nil || len(resp.GetFailures()) != 0 {
			t.Fatalf("ack: %v %v", resp, err)
		}
	}
}
