package server_test

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/token"
)

// Rules of consumer resets (ADR-60) as a caller sees them: each test fails
// when its rule alone is broken.

// resetConsumerTo resets the consumer to deliver again from stream
// sequence seq, as `nats consumer reset <seq>` does.
func (h *harness) resetConsumerTo(name string, seq uint64) {
	h.t.Helper()
	m, err := h.nc.Request("$JS.API.CONSUMER.RESET."+stream+"."+name, fmt.Appendf(nil, `{"seq":%d}`, seq), 5*time.Second)
	if err != nil {
		h.t.Fatalf("reset to %d: %v", seq, err)
	}
	if m.Header.Get("Status") != "" || len(m.Data) == 0 {
		h.t.Fatalf("reset to %d answered %q %v", seq, m.Data, m.Header)
	}
}

// A token of a message delivered twice before a reset names a delivery
// counted more often than the one made after it: the count going back is
// the reset. Its issuer (A) is gone, so nobody but B, which holds the
// delivery after the reset, can refuse it: B must not act on the token
// alone and ack its own delivery.
func TestStaleTokenOfARedeliveryDoesNotAckTheDeliveryAfterAReset(t *testing.T) {
	h := newHarness(t, withKeys(token.RandomKeyring()))
	_, b, _ := h.startGateway()
	h.publish(1)
	first := h.fetchOne(time.Second) // through A
	wantNoFailures(t, nak(t, h, h.cons, 0, first.GetToken()))
	old := h.fetchOne(2 * time.Second)
	if old.GetMetadata().GetNumDelivered() != 2 {
		t.Fatalf("after a Nak: delivered %d; want 2", old.GetMetadata().GetNumDelivered())
	}
	h.gw.Close() // the issuer is gone
	h.resetConsumer(consumer)
	r := h.fetch(b, consumer, 1, 2*time.Second).GetMessages()
	if len(r) != 1 || r[0].GetMetadata().GetNumDelivered() != 1 || r[0].GetMetadata().GetStreamSeq() != old.GetMetadata().GetStreamSeq() {
		t.Fatalf("after the reset, through B: %v", r)
	}
	tp := h.tap()
	wantFailure(t, ack(t, h, b, old.GetToken()), 0, "LEASE_EXPIRED")
	tp.none(t, "the stale Ack")
	if n := h.info(consumer).NumAckPending; n != 1 {
		t.Fatalf("B's delivery is no longer pending on the server (%d pending)", n)
	}
	wantNoFailures(t, ack(t, h, b, r[0].GetToken()))
}

// A settled lease is forgotten at a reset like a live one: a retried Ack
// from before it is not an idempotent success, since the message it acked
// is delivered again.
//
// The stream is held in memory: after the reset to message 1, a file-backed
// consumer (nats-server 2.15.2) may answer infos with its count from before
// the reset, 2, until it delivers past it; the replica marks the pull after
// the replay's first delivery above 2, and message 2's replay, delivery 2,
// shows it a reset again, voiding the lease of message 1's (its Ack failed
// LEASE_EXPIRED 6 runs in 60 under load). That is the server's bug, not this
// rule's.
func TestARetriedAckFromBeforeAResetIsNotReportedDone(t *testing.T) {
	h := newHarness(t, inMemory)
	h.publish(2)
	got := h.fetch(h.cons, consumer, 2, time.Second).GetMessages()
	if len(got) != 2 {
		t.Fatalf("fetched %d; want 2", len(got))
	}
	wantNoFailures(t, ack(t, h, h.cons, got[1].GetToken()))
	h.resetConsumer(consumer) // the ack floor is 0: both come again
	again := h.fetch(h.cons, consumer, 1, 2*time.Second).GetMessages()
	if len(again) != 1 || again[0].GetMetadata().GetStreamSeq() != got[0].GetMetadata().GetStreamSeq() {
		t.Fatalf("after the reset: %v", again)
	}
	tp := h.tap()
	wantFailure(t, ack(t, h, h.cons, got[1].GetToken()), 0, "LEASE_EXPIRED")
	tp.none(t, "the retried Ack")
	next := h.fetch(h.cons, consumer, 1, 2*time.Second).GetMessages()
	if len(next) != 1 || next[0].GetMetadata().GetStreamSeq() != got[1].GetMetadata().GetStreamSeq() {
		t.Fatalf("the message acked before the reset is not delivered again: %v", next)
	}
	wantNoFailures(t, ack(t, h, h.cons, again[0].GetToken(), next[0].GetToken()))
}

// A first delivery of a message at the highest stream sequence a replica
// (A) knows delivered is a reset, even where the consumer sequence shows
// nothing (A has received nothing yet). Another replica (B) holds a lease
// from before it, and cannot see the reset in its own count: A must tell
// it, so that B's stale Ack does not ack A's delivery.
//
// Reset 1 (to 3) leaves the server counting stream 2, consumer 0, which A
// learns when it starts. B then takes message 3; reset 2 (to 2) delivers 2
// and 3 again to A's waiting Fetch, leaving the server's count where B's
// was.
func TestAFirstDeliveryAtTheStreamFloorIsAReset(t *testing.T) {
	h := newHarness(t, withKeys(token.RandomKeyring()))
	b := h.cons // B: the harness's first replica
	h.publish(3)
	h.resetConsumerTo(consumer, 3)
	// A starts a moment after B, whose entry in the roster may not have
	// reached A's watch yet: B hands nothing out before its entry is
	// stored, and A catches up with the roster before it counts whom to
	// tell.
	_, a, _ := h.startGateway()
	if _, err := a.GetConsumer(h.ctx(), &jetgatev1.GetConsumerRequest{Stream: stream, Consumer: consumer}); err != nil {
		t.Fatal(err)
	}
	held := h.fetch(b, consumer, 1, time.Second).GetMessages()
	if len(held) != 1 || held[0].GetMetadata().GetStreamSeq() != 3 {
		t.Fatalf("through B after reset 1: %v; want message 3", held)
	}
	waiting := h.waitingFetchOf(a, 2)
	natstest.Eventually(t, 5*time.Second, "A's Fetch waits", func() bool { return h.info(consumer).NumWaiting == 1 })
	h.resetConsumerTo(consumer, 2)
	r := <-waiting
	if r.err != nil || len(r.msgs) != 2 {
		t.Fatalf("A's Fetch after reset 2: %v %v; want messages 2 and 3", r.msgs, r.err)
	}
	tp := h.tap()
	wantFailure(t, ack(t, h, b, held[0].GetToken()), 0, "LEASE_EXPIRED")
	tp.none(t, "B's stale Ack")
	if n := h.info(consumer).NumAckPending; n != 2 {
		t.Fatalf("A's deliveries pending on the server: %d; want 2", n)
	}
	wantNoFailures(t, ack(t, h, a, r.msgs[0].GetToken(), r.msgs[1].GetToken()))
}

type fetched struct {
	msgs []*jetgatev1.Message
	err  error
}

// waitingFetchOf starts a Fetch of batch through c that waits up to 5s.
func (h *harness) waitingFetchOf(c jetgatev1.ConsumerServiceClient, batch int32) <-chan fetched {
	out := make(chan fetched, 1)
	go func() {
		resp, err := c.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: batch, Expires: durationpb.New(5 * time.Second)})
		out <- fetched{resp.GetMessages(), err}
	}()
	return out
}
