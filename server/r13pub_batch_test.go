package server_test

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// A batch's first message that fits max_payload alone, but not with the
// headers the batch adds to it, must fail the batch, never answer success
// with nothing stored.
func TestABatchMessageOverMaxPayloadWithTheBatchHeadersIsRefused(t *testing.T) {
	h := newHarness(t)
	h.allow()
	limit := int(h.nc.MaxPayload())
	req := &jetgatev1.PublishBatchRequest{Stream: stream, Messages: []*jetgatev1.BatchMessage{
		{Subject: "orders.big", Data: make([]byte, limit-10)},
		{Subject: "orders.small", Data: []byte("x")},
	}}
	before := h.msgCount()
	r, err := h.strm.PublishBatch(h.ctx(), req)
	if code, reason := codeAndReason(err); code != codes.InvalidArgument || reason != "PAYLOAD_TOO_LARGE" || !strings.Contains(err.Error(), "messages[0]") {
		t.Errorf("a batch whose first message passes max_payload with the batch's headers: %v, seqs %v; want INVALID_ARGUMENT PAYLOAD_TOO_LARGE naming messages[0]", err, r.GetSeqs())
	}
	if n := h.msgCount() - before; n != 0 {
		t.Errorf("%d messages stored; want none", n)
	}
}

// A message of a batch that the stream refuses before the last is answered
// by the server to no one (PublishMsgBatch sends it without a reply): the
// commit says only "atomic publish batch is incomplete". The answer must
// still say which message and why.
func TestABatchMessageOverTheStreamsMaxMsgSizeIsNamed(t *testing.T) {
	h := newHarness(t)
	h.allow()
	h.updateStream(func(c *jetstream.StreamConfig) { c.MaxMsgSize = 512 })
	req := &jetgatev1.PublishBatchRequest{Stream: stream, Messages: []*jetgatev1.BatchMessage{
		{Subject: "orders.1", Data: []byte("a")},
		{Subject: "orders.2", Data: make([]byte, 1024)},
		{Subject: "orders.3", Data: []byte("c")},
	}}
	_, err := h.strm.PublishBatch(h.ctx(), req)
	code, reason := codeAndReason(err)
	if code != codes.FailedPrecondition || reason != "PUBLISH_REFUSED" || !strings.Contains(err.Error(), "messages[1]") || !strings.Contains(err.Error(), "max_msg_size") {
		t.Errorf("a batch whose second message is over the stream's max_msg_size: %v; want FAILED_PRECONDITION PUBLISH_REFUSED naming messages[1] and max_msg_size", err)
	}
	if n := h.msgCount(); n != 0 {
		t.Errorf("%d messages stored; want none", n)
	}
}
