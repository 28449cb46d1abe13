package server_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// msgCount is how many messages the stream holds.
func (h *harness) msgCount() uint64 {
	h.t.Helper()
	s, err := h.js.Stream(h.ctx(), stream)
	if err != nil {
		h.t.Fatal(err)
	}
	info, err := s.Info(h.ctx())
	if err != nil {
		h.t.Fatal(err)
	}
	return info.State.Msgs
}

// updateStream changes the stream's configuration as an operator would.
func (h *harness) updateStream(change func(*jetstream.StreamConfig)) {
	h.t.Helper()
	s, err := h.js.Stream(h.ctx(), stream)
	if err != nil {
		h.t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	change(&cfg)
	if _, err := h.js.UpdateStream(h.ctx(), cfg); err != nil {
		h.t.Fatal(err)
	}
}

func publishWith(header, value string) *jetgatev1.PublishRequest {
	return &jetgatev1.PublishRequest{
		Stream: stream, Subject: "orders.new", Data: []byte("x"),
		Headers: map[string]*jetgatev1.HeaderValues{header: {Values: []string{value}}},
	}
}

// A client's Nats- header would make the server act on the caller's say: a
// rollup purges the stream, a TTL expires the message, a message id
// deduplicates outside msg_id. Each is refused before anything is stored.
func TestPublishRefusesReservedHeaders(t *testing.T) {
	h := newHarness(t)
	h.publish(3)
	// With rollups allowed, a Nats-Rollup: all that got through would purge
	// the three messages; with TTLs allowed, a Nats-TTL would be honoured.
	h.updateStream(func(c *jetstream.StreamConfig) { c.AllowRollup = true; c.AllowMsgTTL = true })

	for _, hdr := range []struct{ name, value string }{
		{"Nats-Rollup", "all"},
		{"nats-rollup", "all"},
		{"NATS-ROLLUP", "sub"},
		{"Nats-TTL", "1s"},
		{"Nats-Msg-Id", "order-1"},
		{"Nats-Stream", "OTHER"},
		{"nats-expected-last-sequence", "3"}, // read by the server only as Nats-Expected-…
	} {
		t.Run(hdr.name, func(t *testing.T) {
			_, err := h.strm.Publish(h.ctx(), publishWith(hdr.name, hdr.value))
			if n := h.msgCount(); n != 3 {
				t.Errorf("the stream holds %d messages after the publish; want the 3 it had", n)
			}
			wantCode(t, err, codes.InvalidArgument, "HEADER_RESERVED")
			if msg := status.Convert(err).Message(); !strings.Contains(msg, strconv.Quote(hdr.name)) {
				t.Errorf("message %q does not name the header %q", msg, hdr.name)
			}
		})
	}
	if _, err := h.strm.Publish(h.ctx(), publishWith("Nats-Msg-Id", "order-1")); !strings.Contains(status.Convert(err).Message(), "msg_id") {
		t.Errorf("refusing Nats-Msg-Id: %v; want the message to point to msg_id", err)
	}
}

// The Nats-Expected-* concurrency checks pass through to the server, which
// applies them: the right last sequence stores the message, a wrong one is
// refused with the server's reason.
func TestPublishPassesExpectedChecks(t *testing.T) {
	h := newHarness(t)
	seqs := h.publish(2)
	last := strconv.FormatUint(seqs[1], 10)

	ack, err := h.strm.Publish(h.ctx(), publishWith("Nats-Expected-Last-Sequence", last))
	if err != nil {
		t.Fatalf("publish expecting last sequence %s (right): %v", last, err)
	}
	if ack.GetSeq() != seqs[1]+1 {
		t.Errorf("stored as seq %d; want %d", ack.GetSeq(), seqs[1]+1)
	}
	if _, err := h.strm.Publish(h.ctx(), publishWith("Nats-Expected-Stream", stream)); err != nil {
		t.Errorf("publish expecting stream %s (right): %v", stream, err)
	}

	_, err = h.strm.Publish(h.ctx(), publishWith("Nats-Expected-Last-Sequence", last)) // no longer the last
	wantCode(t, err, codes.FailedPrecondition, "PUBLISH_REFUSED")
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "wrong last sequence") {
		t.Errorf("message %q does not carry the server's reason", msg)
	}
	_, err = h.strm.Publish(h.ctx(), publishWith("Nats-Expected-Stream", "PAYMENTS"))
	wantCode(t, err, codes.FailedPrecondition, "PUBLISH_REFUSED")
	if n := h.msgCount(); n != 4 {
		t.Errorf("the stream holds %d messages; want 4: two refused publishes stored nothing", n)
	}
}
