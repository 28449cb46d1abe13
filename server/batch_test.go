package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// allow turns on the stream's per-message ttl and atomic batches.
func (h *harness) allow() {
	h.t.Helper()
	h.updateStream(func(c *jetstream.StreamConfig) { c.AllowMsgTTL, c.AllowAtomicPublish = true, true })
}

func TestPublishTTL(t *testing.T) {
	h := newHarness(t)
	ttl := durationpb.New(time.Minute)
	_, err := h.strm.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: stream, Subject: "orders.ttl", Data: []byte("x"), Ttl: ttl})
	if code, reason := codeAndReason(err); code != codes.FailedPrecondition || reason != "TTL_NOT_ALLOWED" {
		t.Fatalf("ttl on a stream without allow_msg_ttl: %v; want FAILED_PRECONDITION TTL_NOT_ALLOWED", err)
	}
	if n := h.msgCount(); n != 0 {
		t.Fatalf("%d messages stored; want none", n)
	}
	_, err = h.strm.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: stream, Subject: "orders.ttl", Ttl: durationpb.New(time.Millisecond)})
	if code, _ := codeAndReason(err); code != codes.InvalidArgument {
		t.Fatalf("a ttl under 1s: %v; want INVALID_ARGUMENT", err)
	}
	h.allow()
	r, err := h.strm.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: stream, Subject: "orders.ttl", Data: []byte("x"), Ttl: ttl})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := h.js.Stream(h.ctx(), stream)
	m, err := s.GetMsg(h.ctx(), r.GetSeq())
	if err != nil || m.Header.Get("Nats-TTL") != "1m0s" {
		t.Fatalf("stored message: %v %v; want Nats-TTL 1m0s", m, err)
	}
}

func TestPublishBatchIsAllOrNone(t *testing.T) {
	h := newHarness(t)
	batch := func(subjects ...string) *jetgatev1.PublishBatchRequest {
		req := &jetgatev1.PublishBatchRequest{Stream: stream}
		for _, s := range subjects {
			req.Messages = append(req.Messages, &jetgatev1.BatchMessage{Subject: s, Data: []byte(s)})
		}
		return req
	}
	_, err := h.strm.PublishBatch(h.ctx(), batch("orders.1", "orders.2"))
	if code, reason := codeAndReason(err); code != codes.FailedPrecondition || reason != "BATCH_NOT_ALLOWED" {
		t.Fatalf("a batch on a stream without allow_atomic: %v; want FAILED_PRECONDITION BATCH_NOT_ALLOWED", err)
	}
	h.allow()
	r, err := h.strm.PublishBatch(h.ctx(), batch("orders.1", "orders.2", "orders.3"))
	if err != nil {
		t.Fatal(err)
	}
	if s := r.GetSeqs(); len(s) != 3 || s[1] != s[0]+1 || s[2] != s[1]+1 {
		t.Fatalf("seqs %v; want three in a row", s)
	}
	st, _ := h.js.Stream(h.ctx(), stream)
	for i, seq := range r.GetSeqs() {
		if m, err := st.GetMsg(h.ctx(), seq); err != nil || string(m.Data) != []string{"orders.1", "orders.2", "orders.3"}[i] {
			t.Fatalf("message %d at seq %d: %v %v", i, seq, m, err)
		}
	}
	before := h.msgCount()
	_, err = h.strm.PublishBatch(h.ctx(), batch("orders.4", "payments.5", "orders.6"))
	if code, reason := codeAndReason(err); code != codes.InvalidArgument || reason != "SUBJECT_NOT_ALLOWED" || !strings.Contains(err.Error(), "messages[1]") {
		t.Fatalf("a batch with a subject outside the stream: %v; want SUBJECT_NOT_ALLOWED naming messages[1]", err)
	}
	// A server-side refusal: the first message expects another last
	// sequence. Nothing of the batch is stored.
	bad := batch("orders.7", "orders.8")
	bad.Messages[0].Headers = map[string]*jetgatev1.HeaderValues{"Nats-Expected-Last-Sequence": {Values: []string{"1"}}}
	_, err = h.strm.PublishBatch(h.ctx(), bad)
	if code, _ := codeAndReason(err); code != codes.FailedPrecondition {
		t.Fatalf("a batch the server refuses: %v; want FAILED_PRECONDITION", err)
	}
	if n := h.msgCount(); n != before {
		t.Fatalf("a refused batch stored %d messages", n-before)
	}
	for _, tt := range []struct {
		name string
		req  *jetgatev1.PublishBatchRequest
	}{
		{"no messages", batch()},
		{"over 1000", batch(make([]string, 1001)...)},
		{"a reserved header", func() *jetgatev1.PublishBatchRequest {
			b := batch("orders.1")
			b.Messages[0].Headers = map[string]*jetgatev1.HeaderValues{"Nats-Msg-Id": {Values: []string{"x"}}}
			return b
		}()},
	} {
		if _, err := h.strm.PublishBatch(h.ctx(), tt.req); codeOf(err) != codes.InvalidArgument {
			t.Errorf("%s: %v; want INVALID_ARGUMENT", tt.name, err)
		}
	}
}

func codeOf(err error) codes.Code { c, _ := codeAndReason(err); return c }
