package server_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// consumeStream opens a Consume and delivers its responses on a channel
// until it ends; cancel ends it as a caller that goes away.
type consumeStream struct {
	resps  chan *jetgatev1.ConsumeResponse
	done   chan error
	cancel context.CancelFunc
}

func (h *harness) consume(c jetgatev1.ConsumerServiceClient, req *jetgatev1.ConsumeRequest) *consumeStream {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req.Stream, req.Consumer = stream, consumer
	st, err := c.Consume(ctx, req)
	if err != nil {
		cancel()
		h.t.Fatal(err)
	}
	cs := &consumeStream{resps: make(chan *jetgatev1.ConsumeResponse, 64), done: make(chan error, 1), cancel: cancel}
	go func() {
		for {
			r, err := st.Recv()
			if err != nil {
				cs.done <- err
				close(cs.resps)
				return
			}
			cs.resps <- r
		}
	}()
	h.t.Cleanup(func() {
		cancel()
		for range cs.resps {
		}
	})
	return cs
}

// next returns the next response that carries messages, counting the
// heartbeats before it.
func (cs *consumeStream) next(t *testing.T, within time.Duration) (msgs []*jetgatev1.Message, beats int) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case r, ok := <-cs.resps:
			if !ok {
				t.Fatalf("the stream ended: %v", <-cs.done)
			}
			if len(r.GetMessages()) > 0 {
				return r.GetMessages(), beats
			}
			beats++
		case <-deadline:
			t.Fatalf("no messages within %v (%d heartbeats)", within, beats)
		}
	}
}

// beats waits for n heartbeats in a row and fails on any message.
func (cs *consumeStream) beats(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for got := 0; got < n; {
		select {
		case r, ok := <-cs.resps:
			if !ok {
				t.Fatalf("the stream ended: %v", <-cs.done)
			}
			if len(r.GetMessages()) > 0 {
				t.Fatalf("%d messages arrived while the stream had no credit", len(r.GetMessages()))
			}
			got++
		case <-deadline:
			t.Fatalf("%d of %d heartbeats", got, n)
		}
	}
}

func tokens(ms []*jetgatev1.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.GetToken()
	}
	return out
}

func TestConsumeHeartbeatsWhileIdle(t *testing.T) {
	h := newHarness(t)
	cs := h.consume(h.cons, &jetgatev1.ConsumeRequest{Heartbeat: durationpb.New(200 * time.Millisecond)})
	cs.beats(t, 2)
	h.publish(1)
	msgs, _ := cs.next(t, 5*time.Second)
	if len(msgs) != 1 || msgs[0].GetToken() == "" {
		t.Fatalf("messages %v", msgs)
	}
}

// Never more than max_messages unsettled leases; pulls again only once half
// the credit is back, from settles made through any replica.
func TestConsumeCreditsAndRefillAtHalf(t *testing.T) {
	h := newHarness(t)
	_, other, _ := h.startGateway()
	h.publish(30)
	cs := h.consume(h.cons, &jetgatev1.ConsumeRequest{MaxMessages: 10, Heartbeat: durationpb.New(200 * time.Millisecond)})
	var held []string
	for len(held) < 10 {
		msgs, _ := cs.next(t, 5*time.Second)
		held = append(held, tokens(msgs)...)
		if len(held) > 10 {
			t.Fatalf("%d leases handed out with max_messages 10", len(held))
		}
	}
	cs.beats(t, 2) // full: nothing more comes
	wantNoFailures(t, ack(t, h, other, held[:4]...))
	held = held[4:]
	cs.beats(t, 2) // 4 of 10 back: less than half, still nothing
	wantNoFailures(t, ack(t, h, h.cons, held[:1]...))
	held = held[1:]
	msgs, _ := cs.next(t, 5*time.Second) // half back: a refill, within the credit
	if len(msgs) == 0 || len(held)+len(msgs) > 10 {
		t.Fatalf("refill of %d with %d held", len(msgs), len(held))
	}
}

// A caller that goes away with 50 unsettled leases has all of them back on
// the server within a second, not after ack_wait (30s here).
func TestConsumeEndGivesLeasesBackAtOnce(t *testing.T) {
	h := newHarness(t)
	h.publish(50)
	cs := h.consume(h.cons, &jetgatev1.ConsumeRequest{MaxMessages: 50, Heartbeat: durationpb.New(time.Second)})
	var held []string
	for len(held) < 50 {
		msgs, _ := cs.next(t, 5*time.Second)
		held = append(held, tokens(msgs)...)
	}
	// One settle races the end: it is applied or refused, never both.
	raced := make(chan []*jetgatev1.TokenFailure, 1)
	go func() {
		resp, err := h.cons.Ack(context.Background(), &jetgatev1.AckRequest{Stream: stream, Consumer: consumer, Tokens: held[:1]})
		if err != nil {
			raced <- nil
			return
		}
		raced <- resp.GetFailures()
	}()
	ended := time.Now()
	cs.cancel()
	fails := <-raced
	wantPending := uint64(50)
	if len(fails) == 0 {
		wantPending = 49 // the Ack took
	} else if r := fails[0].GetReason(); r != "LEASE_SETTLED" && r != "SETTLE_IN_PROGRESS" {
		t.Fatalf("the racing Ack: %v", fails)
	}
	got := 0
	for got < int(wantPending) {
		resp := h.fetch(h.cons, consumer, 50, 3*time.Second)
		for _, m := range resp.GetMessages() {
			if m.GetMetadata().GetNumDelivered() != 2 {
				t.Fatalf("message %d delivered %d times; want 2", m.GetMetadata().GetStreamSeq(), m.GetMetadata().GetNumDelivered())
			}
		}
		got += len(resp.GetMessages())
		if len(resp.GetMessages()) == 0 {
			t.Fatalf("%d of %d came back", got, wantPending)
		}
	}
	if took := time.Since(ended); took > 3*time.Second {
		t.Fatalf("the leases came back after %v; want about a second (ack_wait is 30s)", took)
	}
}

// With auto_extend a lease outlives three ack_waits while its stream is
// open, and comes back within a second of the stream ending.
func TestConsumeAutoExtendHoldsLeasesWhileTheStreamLives(t *testing.T) {
	h := newHarness(t, ackWait(time.Second))
	h.publish(1)
	start := time.Now()
	cs := h.consume(h.cons, &jetgatev1.ConsumeRequest{AutoExtend: true, Heartbeat: durationpb.New(300 * time.Millisecond)})
	if msgs, _ := cs.next(t, 5*time.Second); len(msgs) != 1 {
		t.Fatalf("messages %v", msgs)
	}
	deadline := time.After(10 * time.Second)
	for time.Since(start) < 3500*time.Millisecond {
		select {
		case r := <-cs.resps:
			if len(r.GetMessages()) > 0 {
				t.Fatalf("redelivered while the stream held it: %v", r.GetMessages())
			}
		case <-deadline:
			t.Fatal("no heartbeats")
		}
	}
	if ci := h.info(consumer); ci.NumRedelivered != 0 || ci.NumAckPending != 1 {
		t.Fatalf("after 3.5 ack_waits: redelivered %d, ack pending %d", ci.NumRedelivered, ci.NumAckPending)
	}
	ended := time.Now()
	cs.cancel()
	m := h.fetchOne(3 * time.Second)
	if took := time.Since(ended); took > 2500*time.Millisecond {
		t.Fatalf("the lease came back after %v", took)
	}
	if d := m.GetMetadata().GetNumDelivered(); d != 2 {
		t.Fatalf("redelivery %d; want 2 (a Nak into the stream's own dead pull would burn one)", d)
	}
}

func TestConsumeRefusesBadRequests(t *testing.T) {
	h := newHarness(t)
	for name, req := range map[string]*jetgatev1.ConsumeRequest{
		"negative max_messages": {MaxMessages: -1},
		"max_messages too big":  {MaxMessages: 100000},
		"tiny heartbeat":        {Heartbeat: durationpb.New(time.Millisecond)},
		"zero max_bytes":        {MaxBytes: ptr(int64(0))},
	} {
		req.Stream, req.Consumer = stream, consumer
		st, err := h.cons.Consume(context.Background(), req)
		if err == nil {
			_, err = st.Recv()
		}
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v; want INVALID_ARGUMENT", name, err)
		}
	}
	st, err := h.cons.Consume(context.Background(), &jetgatev1.ConsumeRequest{Stream: stream, Consumer: "nope"})
	if err == nil {
		_, err = st.Recv()
	}
	if status.Code(err) != codes.NotFound || errors.Is(err, io.EOF) {
		t.Errorf("unknown consumer: %v; want NOT_FOUND", err)
	}
}

// A lease its caller extended by a duration is kept alive for it when its
// stream ends (DESIGN 17: the keep-alive ends with its replica), not
// nak'ed with the others: a client library opening its stream again still
// works on it.
func TestALeaseExtendedByADurationOutlivesItsStream(t *testing.T) {
	h := newHarness(t)
	h.publish(2)
	cs := h.consume(h.cons, &jetgatev1.ConsumeRequest{MaxMessages: 2, Heartbeat: durationpb.New(time.Second)})
	var msgs []*jetgatev1.Message
	for len(msgs) < 2 {
		got, _ := cs.next(t, 5*time.Second)
		msgs = append(msgs, got...)
	}
	resp, err := h.cons.Extend(h.ctx(), &jetgatev1.ExtendRequest{Stream: stream, Consumer: consumer, Tokens: tokens(msgs[:1]), Duration: durationpb.New(time.Minute)})
	if err != nil || len(resp.GetFailures()) > 0 {
		t.Fatalf("extend: %v %v", err, resp.GetFailures())
	}
	cs.cancel()
	// The other one comes back at once; the one extended does not.
	back := h.fetch(h.cons, consumer, 2, 5*time.Second).GetMessages()
	if len(back) != 1 || back[0].GetMetadata().GetStreamSeq() != msgs[1].GetMetadata().GetStreamSeq() {
		t.Fatalf("after the stream ended: %v; want message %d alone", back, msgs[1].GetMetadata().GetStreamSeq())
	}
	ack, err := h.cons.Ack(h.ctx(), &jetgatev1.AckRequest{Stream: stream, Consumer: consumer, Tokens: append(tokens(back), resp.GetLeases()[0].GetToken())})
	if err != nil || len(ack.GetFailures()) > 0 {
		t.Fatalf("ack: %v %v", err, ack.GetFailures())
	}
}

// A Consume stream at its max_messages, with no pull open, ends NOT_FOUND
// once its consumer is deleted on the server (the advisory has it ask the
// server): it sent heartbeats over a deleted consumer's lease until the
// lease's deadline.
func TestAFullConsumeStreamEndsWhenItsConsumerIsDeleted(t *testing.T) {
	h := newHarness(t)
	h.publish(2)
	cs := h.consume(h.cons, &jetgatev1.ConsumeRequest{MaxMessages: 1, Heartbeat: durationpb.New(200 * time.Millisecond)})
	if msgs, _ := cs.next(t, 5*time.Second); len(msgs) != 1 {
		t.Fatalf("%d messages; want 1", len(msgs))
	}
	cs.beats(t, 2) // full: no pull open
	if err := h.js.DeleteConsumer(h.ctx(), stream, consumer); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second) // ack_wait is 30s
	for {
		select {
		case _, ok := <-cs.resps:
			if ok {
				continue // heartbeats
			}
			wantCode(t, <-cs.done, codes.NotFound, "CONSUMER_NOT_FOUND")
			return
		case <-deadline:
			t.Fatal("the stream still runs 10s after its consumer was deleted")
		}
	}
}

// A Consume sends its headers once its stream is open, before any message
// or heartbeat: a caller can tell an open stream from one still being
// refused; one refused answers its status alone.
func TestAConsumeSendsItsHeadersOnceOpen(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // the heartbeat is 5m
	defer cancel()
	st, err := h.cons.Consume(ctx, &jetgatev1.ConsumeRequest{Stream: stream, Consumer: consumer, MaxMessages: 5, Heartbeat: durationpb.New(5 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Header(); err != nil {
		t.Fatalf("no headers before the first response: %v", err)
	}
	h.publish(1)
	r, err := st.Recv()
	if err != nil || len(r.GetMessages()) != 1 {
		t.Fatalf("first response %v (%v); want the message", r, err)
	}

	st, err = h.cons.Consume(ctx, &jetgatev1.ConsumeRequest{Stream: stream, Consumer: "nobody", MaxMessages: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Header(); err == nil {
		_, err = st.Recv()
		wantCode(t, err, codes.NotFound, "CONSUMER_NOT_FOUND")
	}
}
