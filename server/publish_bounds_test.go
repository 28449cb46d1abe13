package server_test

import (
	"math"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// longestTTL is Publish's bound: 100 years.
const longestTTL = 100 * 365 * 24 * time.Hour

// A ttl the server cannot hold (its expiry, in int64 nanoseconds, would pass
// the year 2262 and wrap into the past) is refused, alone or in an atomic
// batch, and nothing is stored; the longest one taken is held by the server:
// its message outlives one with a ttl of 1s.
func TestATTLPastWhatTheServerHoldsIsRefused(t *testing.T) {
	h := newHarness(t)
	h.updateStream(func(c *jetstream.StreamConfig) { c.AllowMsgTTL, c.AllowAtomicPublish = true, true })
	if now := time.Now().UnixNano(); now > math.MaxInt64-int64(longestTTL) {
		t.Fatalf("the ttl bound %v overflows the server's expiry from now", longestTTL)
	}
	for _, ttl := range []time.Duration{longestTTL + time.Second, 7500000000 * time.Second, math.MaxInt64} {
		_, err := h.strm.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: stream, Subject: "orders.ttl", Data: []byte("x"), Ttl: durationpb.New(ttl)})
		wantCode(t, err, codes.InvalidArgument, "INVALID_ARGUMENT")
		_, err = h.strm.PublishBatch(h.ctx(), &jetgatev1.PublishBatchRequest{Stream: stream, Messages: []*jetgatev1.BatchMessage{
			{Subject: "orders.ttl", Data: []byte("a")}, {Subject: "orders.ttl", Data: []byte("b"), Ttl: durationpb.New(ttl)},
		}})
		wantCode(t, err, codes.InvalidArgument, "INVALID_ARGUMENT")
	}
	if _, err := h.strm.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: stream, Subject: "orders.ttl", Ttl: &durationpb.Duration{Seconds: 10000 * 365 * 24 * 3600}}); err == nil {
		t.Fatal("a ttl of 10000 years was taken")
	}
	if n := h.msgCount(); n != 0 {
		t.Fatalf("%d messages stored by refused publishes", n)
	}
	long, err := h.strm.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: stream, Subject: "orders.ttl", Data: []byte("long"), Ttl: durationpb.New(longestTTL)})
	if err != nil {
		t.Fatal(err)
	}
	short, err := h.strm.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: stream, Subject: "orders.ttl", Data: []byte("short"), Ttl: durationpb.New(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := h.js.Stream(h.ctx(), stream)
	if err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 10*time.Second, "the 1s message expired", func() bool {
		_, err := s.GetMsg(h.ctx(), short.GetSeq())
		return err != nil
	})
	if _, err := s.GetMsg(h.ctx(), long.GetSeq()); err != nil {
		t.Fatalf("the message with the longest ttl taken is gone: %v", err)
	}
}

// A header name NATS refuses is the caller's error (400 HEADER_INVALID),
// not an unavailable NATS to retry; nothing is stored.
func TestHeaderNamesNATSRefusesAreInvalid(t *testing.T) {
	h := newHarness(t)
	for _, c := range "/()@=,;?{}[]\\<>\":" {
		name := "X-A" + string(c) + "B"
		_, err := h.strm.Publish(h.ctx(), publishWith(name, "v"))
		wantCode(t, err, codes.InvalidArgument, "HEADER_INVALID")
	}
	for _, name := range []string{"", "X A", "X-\x7f", "X-é", "X-\tB"} {
		_, err := h.strm.Publish(h.ctx(), publishWith(name, "v"))
		wantCode(t, err, codes.InvalidArgument, "HEADER_INVALID")
	}
	if n := h.msgCount(); n != 0 {
		t.Fatalf("%d messages stored", n)
	}
	if _, err := h.strm.Publish(h.ctx(), publishWith("X-Ok_1.2~!#$%&'*+^`|", "v")); err != nil {
		t.Fatalf("a header name nats.go takes: %v", err)
	}
}
