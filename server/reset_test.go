package server_test

import (
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/token"
)

// resetConsumer resets the consumer as `nats consumer reset` does (ADR-60):
// its pending list is dropped and its messages are delivered again, with
// consumer sequence and delivery count restarted.
func (h *harness) resetConsumer(name string) {
	h.t.Helper()
	m, err := h.nc.Request("$JS.API.CONSUMER.RESET."+stream+"."+name, nil, 5*time.Second)
	if err != nil {
		h.t.Fatalf("reset: %v", err)
	}
	if s := string(m.Data); len(s) == 0 || m.Header.Get("Status") != "" {
		h.t.Fatalf("reset answered %q %v", s, m.Header)
	}
}

// A lease from before a reset never settles the delivery after it: fetch,
// reset, fetch again (the same message), Ack the old token: LEASE_EXPIRED
// and nothing sent; the new delivery, left unanswered, comes back.
func TestStaleTokenAfterAResetSettlesNothing(t *testing.T) {
	h := newHarness(t, ackWait(2*time.Second))
	h.publish(1)
	old := h.fetchOne(time.Second)
	h.resetConsumer(consumer)
	again := h.fetchOne(2 * time.Second)
	if again.GetMetadata().GetStreamSeq() != old.GetMetadata().GetStreamSeq() || again.GetMetadata().GetNumDelivered() != 1 {
		t.Fatalf("after the reset: seq %d delivery %d; want seq %d delivered 1", again.GetMetadata().GetStreamSeq(), again.GetMetadata().GetNumDelivered(), old.GetMetadata().GetStreamSeq())
	}
	tp := h.tap()
	wantFailure(t, ack(t, h, h.cons, old.GetToken()), 0, "LEASE_EXPIRED")
	select {
	case m := <-tp.msgs:
		t.Fatalf("the stale Ack reached the server: %s %q", m.Subject, m.Data)
	case <-time.After(200 * time.Millisecond):
	}
	// Left unanswered, the new delivery comes back after ack_wait.
	back := h.fetchOne(5 * time.Second)
	if back.GetMetadata().GetStreamSeq() != again.GetMetadata().GetStreamSeq() || back.GetMetadata().GetNumDelivered() != 2 {
		t.Fatalf("after ack_wait: seq %d delivery %d; want the message again, delivered 2", back.GetMetadata().GetStreamSeq(), back.GetMetadata().GetNumDelivered())
	}
	wantNoFailures(t, ack(t, h, h.cons, back.GetToken()))
}

// The lease's issuer (A) and the delivery after the reset (B) on different
// replicas: the stale Ack through B, which holds the later delivery, is
// refused there rather than forwarded to A and sent.
func TestStaleTokenAfterAResetIsRefusedByTheReplicaHoldingTheNewDelivery(t *testing.T) {
	h := newHarness(t, ackWait(2*time.Second), withKeys(token.RandomKeyring()))
	_, b, _ := h.startGateway()
	h.publish(1)
	old := h.fetchOne(time.Second) // through A
	h.resetConsumer(consumer)
	r := h.fetch(b, consumer, 1, 2*time.Second).GetMessages()
	if len(r) != 1 || r[0].GetMetadata().GetNumDelivered() != 1 {
		t.Fatalf("after the reset, through B: %v", r)
	}
	tp := h.tap()
	wantFailure(t, ack(t, h, b, old.GetToken()), 0, "LEASE_EXPIRED")
	select {
	case m := <-tp.msgs:
		t.Fatalf("the stale Ack reached the server: %s %q", m.Subject, m.Data)
	case <-time.After(200 * time.Millisecond):
	}
	back := h.fetch(b, consumer, 1, 5*time.Second).GetMessages()
	if len(back) != 1 || back[0].GetMetadata().GetNumDelivered() != 2 {
		t.Fatalf("B's delivery, unanswered, is not back after ack_wait: %v", back)
	}
}
