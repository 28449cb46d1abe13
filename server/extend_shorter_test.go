package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// DESIGN 17's models, Pub/Sub's ModifyAckDeadline and SQS's
// ChangeMessageVisibility, redeliver a message when the time asked ends.
// An Extend shorter than a wait was sent as +WPI, which restarted the
// server's clock at a whole ack_wait: the lease ended when asked, and the
// message stayed hidden from everyone until a wait on, later than had the
// caller done nothing. It goes as a Nak with a delay, which the server
// times from one ack_wait ago.
func TestAShorterExtendGivesTheMessageBackWhenItEnds(t *testing.T) {
	h := newHarness(t, ackWait(20*time.Second))
	h.publish(1)
	m := h.fetchOne(time.Second)
	tp := h.tap()
	asked := time.Now()
	resp, err := h.cons.Extend(h.ctx(), &jetgatev1.ExtendRequest{Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()}, Duration: durationpb.New(time.Second)})
	if err != nil || len(resp.GetFailures()) != 0 {
		t.Fatalf("extend: %v %v", err, resp.GetFailures())
	}
	if d := resp.GetLeases()[0].GetLeaseDeadline().AsTime().Sub(asked); d <= 0 || d > 2*time.Second {
		t.Errorf("leaseDeadline %v after the request; want the 1s asked (from when the replica sent it)", d)
	}
	if w := tp.next(t); !strings.HasPrefix(string(w.Data), "-NAK {") {
		t.Errorf("sent %q; want a Nak with a delay", w.Data)
	}
	// Doing nothing, it would come back 20s after its delivery; a +WPI,
	// 20s after the Extend.
	plain, err := h.js.Consumer(h.ctx(), stream, consumer)
	if err != nil {
		t.Fatal(err)
	}
	b, err := plain.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	msg, ok := <-b.Messages()
	if !ok {
		t.Fatal("not redelivered within 10s of an Extend of 1s (ack_wait 20s)")
	}
	if md, _ := msg.Metadata(); md.NumDelivered != 2 {
		t.Errorf("redelivered with count %d; want 2", md.NumDelivered)
	}
	_ = msg.Ack()
}

// The lease stays the caller's until the time asked: its new token settles
// it, and the server does not redeliver it.
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
