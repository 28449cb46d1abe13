package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// A Consume stream whose next message is larger than the consumer's own
// max_request_max_bytes (an operator's limit, set with the NATS CLI) ends
// MESSAGE_TOO_LARGE naming that limit. It said "larger than the stream's
// max_bytes (0); open the stream with a larger max_bytes": a caller that set
// no max_bytes was told to raise it, and one that did (1,000 here) was
// refused all the same, whatever it asked.
func TestAConsumeRefusedByTheConsumersMaxRequestMaxBytesSaysSo(t *testing.T) {
	h := newHarness(t)
	_ = h.fetch(h.cons, consumer, 1, 0) // bound
	cfg := h.info(consumer).Config
	cfg.MaxRequestMaxBytes = 100
	if _, err := h.js.UpdateConsumer(h.ctx(), stream, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := h.js.Publish(h.ctx(), "orders.test", make([]byte, 200)); err != nil {
		t.Fatal(err)
	}
	for _, maxBytes := range []*int64{nil, ptr(int64(1000))} {
		asked := "unset"
		if maxBytes != nil {
			asked = "1000"
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		st, err := h.cons.Consume(ctx, &jetgatev1.ConsumeRequest{Stream: stream, Consumer: consumer, MaxBytes: maxBytes, Heartbeat: durationpb.New(time.Second)})
		for err == nil {
			_, err = st.Recv()
		}
		cancel()
		c, reason := codeAndReason(err)
		msg := statusMessage(err)
		if c != codes.FailedPrecondition || reason != "MESSAGE_TOO_LARGE" {
			t.Fatalf("max_bytes %s: %v %s: %s; want FAILED_PRECONDITION MESSAGE_TOO_LARGE", asked, c, reason, msg)
		}
		if !strings.Contains(msg, "max_request_max_bytes (100)") || strings.Contains(msg, "larger max_bytes") {
			t.Errorf("max_bytes %s: %q; want the consumer's max_request_max_bytes (100) named, not the stream's max_bytes", asked, msg)
		}
	}
}
