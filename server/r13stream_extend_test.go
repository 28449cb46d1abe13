package server_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// A caller that ends its Consume stream and at once extends a message it
// still works on (a client library closing its stream with handlers
// running, keeping their messages alive) keeps that message: the Extend
// answered OK with a new deadline, and the stream's give-back, which waits
// for the stream's last pull to end, nak'ed it all the same, and the next
// Fetch was handed it while the caller held a lease it had been told was
// its own for 10s more.
func TestAnExtendJustAfterTheStreamEndedIsNotNakedUnderIt(t *testing.T) {
	h := newHarness(t)
	h.publish(1)
	cs := h.consume(h.cons, &jetgatev1.ConsumeRequest{MaxMessages: 2, Heartbeat: durationpb.New(time.Second)})
	msgs, _ := cs.next(t, 10*time.Second)
	// Holding one of two, the stream has a pull open (half its room is
	// free): its leases go back once that pull ends, up to a second.
	cs.cancel()
	ended := time.Now()
	resp, err := h.cons.Extend(h.ctx(), &jetgatev1.ExtendRequest{Stream: stream, Consumer: consumer,
		Tokens: tokens(msgs), Duration: durationpb.New(10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetFailures()) > 0 {
		t.Skipf("the Extend came after the give-back: %v", resp.GetFailures()) // then the caller knows
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := h.cons.Fetch(ctx, &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Expires: durationpb.New(3 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if ms := got.GetMessages(); len(ms) > 0 {
		t.Fatalf("the message extended for 10s (deadline %v) was handed to another caller %v after the stream ended, delivered %d times",
			resp.GetLeases()[0].GetLeaseDeadline().AsTime().Format(time.RFC3339Nano), time.Since(ended).Round(time.Millisecond), ms[0].GetMetadata().GetNumDelivered())
	}
	wantNoFailures(t, ack(t, h, h.cons, resp.GetLeases()[0].GetNewToken()))
}

// A lease its caller extended by a duration shorter than ack_wait, before
// its stream ended, is kept for the time asked, as README promises of any
// such lease ("but for those its caller extended by a duration: they are
// kept alive for the time asked"): only a duration past the lease's
// deadline was kept, and one of 10s under an ack_wait of 30s was nak'ed
// with the stream and handed to the next Fetch at once.
func TestALeaseExtendedByAShortDurationOutlivesItsStream(t *testing.T) {
	h := newHarness(t)
	h.publish(1)
	cs := h.consume(h.cons, &jetgatev1.ConsumeRequest{MaxMessages: 2, Heartbeat: durationpb.New(time.Second)})
	msgs, _ := cs.next(t, 10*time.Second)
	resp, err := h.cons.Extend(h.ctx(), &jetgatev1.ExtendRequest{Stream: stream, Consumer: consumer,
		Tokens: tokens(msgs), Duration: durationpb.New(10 * time.Second)})
	if err != nil || len(resp.GetFailures()) > 0 {
		t.Fatalf("extend: %v %v", err, resp.GetFailures())
	}
	cs.cancel()
	ended := time.Now()
	got := h.fetch(h.cons, consumer, 1, 3*time.Second)
	if ms := got.GetMessages(); len(ms) > 0 {
		t.Fatalf("the message extended for 10s was handed to another caller %v after the stream ended, delivered %d times",
			time.Since(ended).Round(time.Millisecond), ms[0].GetMetadata().GetNumDelivered())
	}
	wantNoFailures(t, ack(t, h, h.cons, resp.GetLeases()[0].GetNewToken()))
}
