package server_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// An Extend shorter than a wait: the lease is the caller's until the time
// asked, and its new token settles it.
func TestAShorterExtendsTokenSettles(t *testing.T) {
	h := newHarness(t, ackWait(20*time.Second))
	h.publish(1)
	m := h.fetchOne(time.Second)
	resp, err := h.cons.Extend(h.ctx(), &jetgatev1.ExtendRequest{Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()}, Duration: durationpb.New(5 * time.Second)})
	if err != nil || len(resp.GetFailures()) != 0 {
		t.Fatalf("extend: %v %v", err, resp.GetFailures())
	}
	wantNoFailures(t, ack(t, h, h.cons, resp.GetLeases()[0].GetNewToken()))
	if ci := h.info(consumer); ci.NumAckPending != 0 || ci.NumRedelivered != 0 {
		t.Errorf("after the ack: %d pending, %d redelivered; want none", ci.NumAckPending, ci.NumRedelivered)
	}
	// A longer Extend than the wait is kept alive by +WPI, as before.
	h.publish(1)
	m = h.fetchOne(time.Second)
	tp := h.tap()
	resp, err = h.cons.Extend(h.ctx(), &jetgatev1.ExtendRequest{Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()}, Duration: durationpb.New(time.Minute)})
	if err != nil || len(resp.GetFailures()) != 0 {
		t.Fatalf("extend: %v %v", err, resp.GetFailures())
	}
	if w := tp.next(t); string(w.Data) != "+WPI" {
		t.Errorf("a 1m Extend of a 20s wait sent %q; want +WPI", w.Data)
	}
	wantNoFailures(t, ack(t, h, h.cons, resp.GetLeases()[0].GetNewToken()))
}

// Under a millisecond, an Extend would be over before it was answered:
// refused, naming 0s, which gives the message back.
func TestAnExtendUnderAMillisecondIsRefused(t *testing.T) {
	h := newHarness(t)
	h.publish(1)
	m := h.fetchOne(time.Second)
	_, err := h.cons.Extend(h.ctx(), &jetgatev1.ExtendRequest{Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()}, Duration: durationpb.New(500 * time.Microsecond)})
	wantCode(t, err, codes.InvalidArgument, "INVALID_ARGUMENT")
}
