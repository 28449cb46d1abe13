package server_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
)

// A Nak's delay is bounded (limits.max_nak_delay, 24h by default): a longer
// one would hold a max_ack_pending place for years. It is refused, naming
// the bound, and the lease stays the caller's; the bound itself is taken.
func TestANakDelayPastTheBoundIsRefused(t *testing.T) {
	h := newHarness(t)
	h.publish(1)
	m := h.fetchOne(time.Second)
	for _, d := range []*durationpb.Duration{
		durationpb.New(coreconsumer.DefaultMaxNakDelay + time.Second),
		{Seconds: 292 * 365 * 24 * 3600},
	} {
		_, err := h.cons.Nak(h.ctx(), &jetgatev1.NakRequest{Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()}, Delay: d})
		wantCode(t, err, codes.InvalidArgument, "INVALID_ARGUMENT")
	}
	resp, err := h.cons.Nak(h.ctx(), &jetgatev1.NakRequest{Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()},
		Delay: durationpb.New(coreconsumer.DefaultMaxNakDelay)})
	if err != nil || len(resp.GetFailures()) != 0 {
		t.Fatalf("a Nak of exactly the bound: %v %v", resp, err)
	}
}
