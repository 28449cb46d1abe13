package server_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// The server keeps a message's ttl in whole seconds and drops the rest
// (parseMessageTTL: int64(dur.Seconds())): a ttl of 1.9s expired the
// message after 1s, while its stored Nats-TTL said 1.9s. A ttl with a
// fraction of a second is refused, saying so.
func TestATTLWithAFractionOfASecondIsRefused(t *testing.T) {
	h := newHarness(t)
	h.allow()
	before := h.msgCount()
	ttl := durationpb.New(1900 * time.Millisecond)
	_, err := h.strm.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: stream, Subject: "orders.ttl", Data: []byte("x"), Ttl: ttl})
	if code, _ := codeAndReason(err); code != codes.InvalidArgument || !strings.Contains(err.Error(), "whole seconds") {
		t.Errorf("a ttl of 1.9s: %v; want INVALID_ARGUMENT saying whole seconds", err)
	}
	b := &jetgatev1.PublishBatchRequest{Stream: stream, Messages: []*jetgatev1.BatchMessage{{Subject: "orders.ttl", Ttl: ttl}}}
	if _, err := h.strm.PublishBatch(h.ctx(), b); codeOf(err) != codes.InvalidArgument {
		t.Errorf("a batch message with a ttl of 1.9s: %v; want INVALID_ARGUMENT", err)
	}
	if n := h.msgCount() - before; n != 0 {
		t.Errorf("%d messages stored; want none", n)
	}
	if _, err := h.strm.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: stream, Subject: "orders.ttl", Ttl: durationpb.New(90 * time.Second)}); err != nil {
		t.Errorf("a ttl of 90s: %v", err)
	}
}
