package server_test

import (
	"strconv"
	"testing"

	"google.golang.org/grpc/codes"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// A concurrency check the server would not apply must not be sent as if it
// were: the server skips a Nats-Expected-Last-Sequence that is empty, stores
// a name it does not know as any header, and reads only the first of several
// values. Each was stored unchecked, the caller told nothing (a lost update
// where the caller asked for a check); "abc" was refused as "wrong last
// sequence". Each is refused, before anything is stored.
func TestAConcurrencyCheckTheServerWouldNotApplyIsRefused(t *testing.T) {
	h := newHarness(t)
	seqs := h.publish(2)
	stale := strconv.FormatUint(seqs[0], 10) // no longer the last
	for _, tt := range []struct {
		name   string
		values []string
		reason string
	}{
		{"Nats-Expected-Last-Sequence", []string{""}, "INVALID_ARGUMENT"},
		{"Nats-Expected-Last-Sequence", []string{"abc"}, "INVALID_ARGUMENT"},
		{"Nats-Expected-Last-Sequence", []string{"-1"}, "INVALID_ARGUMENT"},
		{"Nats-Expected-Last-Sequence", []string{"2", stale}, "INVALID_ARGUMENT"},
		{"Nats-Expected-Last-Subject-Sequence", []string{""}, "INVALID_ARGUMENT"},
		{"Nats-Expected-Stream", []string{""}, "INVALID_ARGUMENT"},
		{"Nats-Expected-Last-Msg-Id", []string{""}, "INVALID_ARGUMENT"},
		{"Nats-Expected-Last-Seq", []string{stale}, "HEADER_RESERVED"},
		{"Nats-Expected-Sequence", []string{stale}, "HEADER_RESERVED"},
	} {
		req := &jetgatev1.PublishRequest{Stream: stream, Subject: "orders.new", Data: []byte("x"),
			Headers: map[string]*jetgatev1.HeaderValues{tt.name: {Values: tt.values}}}
		_, err := h.strm.Publish(h.ctx(), req)
		if code, reason := codeAndReason(err); code != codes.InvalidArgument || reason != tt.reason {
			t.Errorf("%s %q: %v; want INVALID_ARGUMENT %s", tt.name, tt.values, err, tt.reason)
		}
	}
	if n := h.msgCount(); n != 2 {
		t.Errorf("the stream holds %d messages; want 2: nothing of the refused publishes", n)
	}
	// The checks NATS knows still pass, the subject one with its subject.
	ok := &jetgatev1.PublishRequest{Stream: stream, Subject: "orders.new", Data: []byte("x"), Headers: map[string]*jetgatev1.HeaderValues{
		"Nats-Expected-Last-Subject-Sequence":         {Values: []string{strconv.FormatUint(seqs[1], 10)}},
		"Nats-Expected-Last-Subject-Sequence-Subject": {Values: []string{"orders.>"}},
	}}
	if _, err := h.strm.Publish(h.ctx(), ok); err != nil {
		t.Errorf("a last subject sequence check on orders.>: %v", err)
	}
}
