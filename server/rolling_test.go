package server_test

import (
	"testing"
	"time"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/token"
)

// The three ways a rolling restart used to misplace a settle: a replica
// acting for a gone issuer must not let a stale settle of the first
// delivery land on the second. Three replicas share a key; A issues, then
// goes away.

// A stale Ack of a nak'ed delivery, through a third replica, must not ack
// the redelivery another caller holds.
func TestStaleAckAfterAnAdoptedNakDoesNotAckTheRedelivery(t *testing.T) {
	h := newHarness(t, withKeys(token.RandomKeyring()))
	h.publish(1)
	t1 := h.fetchOne(time.Second)
	_, b, _ := h.startGateway()
	_, c, _ := h.startGateway()
	h.gw.Close() // the issuer is gone

	wantNoFailures(t, nak(t, h, b, 0, t1.GetToken())) // adopted by B
	t2 := h.fetch(b, consumer, 1, 5*time.Second).GetMessages()
	if len(t2) != 1 || t2[0].GetMetadata().GetNumDelivered() != 2 {
		t.Fatalf("redelivery through B: %v", t2)
	}
	wantFailure(t, ack(t, h, c, t1.GetToken()), 0, "LEASE_SETTLED")
	// The second holder's Nak (or Ack) is still its own to give.
	wantNoFailures(t, nak(t, h, b, 0, t2[0].GetToken()))
	t3 := h.fetch(b, consumer, 1, 5*time.Second).GetMessages()
	if len(t3) != 1 || t3[0].GetMetadata().GetNumDelivered() != 3 {
		t.Fatalf("the message was lost: the stale Ack landed on the redelivery (got %v)", t3)
	}
	wantNoFailures(t, ack(t, h, b, t3[0].GetToken()))
	natstest.Eventually(t, 5*time.Second, "acked", func() bool { return h.info(consumer).NumAckPending == 0 })
}

// A retried Nak of the first delivery, through a third replica, succeeds
// without naking the redelivery another caller holds.
func TestRetriedAdoptedNakDoesNotNakTheRedelivery(t *testing.T) {
	h := newHarness(t, withKeys(token.RandomKeyring()))
	h.publish(1)
	t1 := h.fetchOne(time.Second)
	_, b, _ := h.startGateway()
	_, c, _ := h.startGateway()
	h.gw.Close()

	wantNoFailures(t, nak(t, h, b, 0, t1.GetToken()))
	t2 := h.fetch(b, consumer, 1, 5*time.Second).GetMessages()
	if len(t2) != 1 {
		t.Fatalf("redelivery through B: %v", t2)
	}
	tp := h.tap()
	wantNoFailures(t, nak(t, h, c, 0, t1.GetToken())) // the retry: reported done
	wantNoFailures(t, nak(t, h, b, 0, t1.GetToken())) // also where the redelivery is known
	wantNoRedelivery(t, h, b, tp, t2[0].GetToken())
}

// The issuer naks, and goes away before the caller sees the answer; the
// caller's retry through another replica must not nak the redelivery.
func TestRetryOfTheIssuersNakDoesNotNakTheRedelivery(t *testing.T) {
	h := newHarness(t, withKeys(token.RandomKeyring()))
	h.publish(1)
	t1 := h.fetchOne(time.Second)
	_, b, _ := h.startGateway()
	_, c, _ := h.startGateway()
	wantNoFailures(t, nak(t, h, h.cons, 0, t1.GetToken()))
	h.gw.Close()

	t2 := h.fetch(b, consumer, 1, 5*time.Second).GetMessages()
	if len(t2) != 1 || t2[0].GetMetadata().GetNumDelivered() != 2 {
		t.Fatalf("redelivery through B: %v", t2)
	}
	tp := h.tap()
	wantNoFailures(t, nak(t, h, c, 0, t1.GetToken()))
	wantFailure(t, ack(t, h, c, t1.GetToken()), 0, "LEASE_SETTLED")
	wantNoRedelivery(t, h, b, tp, t2[0].GetToken())
}

// wantNoRedelivery checks that nothing reached the server since tp started
// and that the holder of the current delivery still owns it: no other
// delivery is handed out, and its Ack finishes the message.
func wantNoRedelivery(t *testing.T, h *harness, holder jetgatev1.ConsumerServiceClient, tp *tap, current string) {
	t.Helper()
	if more := h.fetch(holder, consumer, 1, 500*time.Millisecond).GetMessages(); len(more) != 0 {
		t.Fatalf("a third delivery was handed out while the second is held: %v", more)
	}
	wantNoFailures(t, ack(t, h, holder, current))
	if m := tp.next(t); string(m.Data) != "+ACK" {
		t.Fatalf("first settle on the wire after the retry: %q; want the holder's +ACK", m.Data)
	}
	natstest.Eventually(t, 5*time.Second, "acked", func() bool {
		ci := h.info(consumer)
		return ci.NumAckPending == 0 && ci.NumPending == 0
	})
}
