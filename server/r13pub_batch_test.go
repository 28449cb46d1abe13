package server_test

import (
	"strings"
	"testing"

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
