package server_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// Headers round-trip losslessly (DESIGN section 1): NATS drops the spaces
// and tabs around a header value when it reads a message, so a value with
// them is refused at Publish, never stored to come back otherwise.
func TestAHeaderValueNATSWouldTrimIsRefused(t *testing.T) {
	h := newHarness(t)
	for _, v := range []string{" a", "a ", "\ta", "a\t", " "} {
		req := publishWith("X-Pad", v)
		_, err := h.strm.Publish(h.ctx(), req)
		if err == nil {
			m := h.fetchOne(time.Second)
			if got := m.GetHeaders()["X-Pad"].GetValues(); !slices.Equal(got, []string{v}) {
				t.Errorf("X-Pad %q was taken and fetched as %q", v, got)
			}
			continue
		}
		if code, reason := codeAndReason(err); code != codes.InvalidArgument || reason != "INVALID_ARGUMENT" {
			t.Errorf("X-Pad %q: %v; want INVALID_ARGUMENT", v, err)
		}
	}
	h.allow()
	b := &jetgatev1.PublishBatchRequest{Stream: stream, Messages: []*jetgatev1.BatchMessage{{Subject: "orders.1", Headers: req1("X-Pad", " a")}}}
	if _, err := h.strm.PublishBatch(h.ctx(), b); codeOf(err) != codes.InvalidArgument {
		t.Errorf("a batch message with X-Pad \" a\": %v; want INVALID_ARGUMENT", err)
	}
	if _, err := h.strm.Publish(h.ctx(), publishWith("X-Inner", "a b\tc")); err != nil {
		t.Errorf("spaces inside a value: %v", err)
	}
}

func req1(name, value string) map[string]*jetgatev1.HeaderValues {
	return map[string]*jetgatev1.HeaderValues{name: {Values: []string{value}}}
}

// The server reads a Nats-Msg-Id without the spaces and tabs around it: " a"
// and "a " were taken as duplicates of "a" (duplicate: true, nothing
// stored), and " " as no msg_id at all (never deduplicated). Such a msg_id
// is refused.
func TestAMsgIDNATSWouldTrimIsRefused(t *testing.T) {
	h := newHarness(t)
	pub := func(id string) (*jetgatev1.PublishResponse, error) {
		return h.strm.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: stream, Subject: "orders.id", Data: []byte(id), MsgId: id})
	}
	if _, err := pub("a"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{" a", "a ", "\ta", " "} {
		r, err := pub(id)
		if code, _ := codeAndReason(err); code != codes.InvalidArgument || !strings.Contains(err.Error(), "msg_id") {
			t.Errorf("msg_id %q: %v, %v; want INVALID_ARGUMENT naming msg_id", id, r, err)
		}
	}
}
