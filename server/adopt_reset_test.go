package server_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/token"
)

// DESIGN 10/18: "a lease issued before a reset must never settle a
// delivery made after it, on any replica". A issues a lease, then goes away
// (restart, crash). The consumer is reset (Seek / nats consumer reset). B
// hands the post-reset delivery of the same message to another caller. The
// first caller's stale Ack arrives through C, which noticed the reset: the
// issuer is gone, so C acts on the token alone: it acked B's caller's
// delivery. The token says when its lease started, before the reset C
// noticed.
func TestAnAdoptedTokenFromBeforeAResetSettlesNothing(t *testing.T) {
	h := newHarness(t, ackWait(30*time.Second), withKeys(token.RandomKeyring()))
	regB, regC := prometheus.NewRegistry(), prometheus.NewRegistry()
	_, b, _ := h.startGatewayWith(regB)
	_, c, _ := h.startGatewayWith(regC)
	h.publish(1)
	old := h.fetchOne(time.Second) // through A
	h.gw.Close()                   // A goes away; its token stays in the caller's hands
	h.resetConsumer(consumer)
	natstest.Eventually(t, 5*time.Second, "B and C notice the reset", func() bool {
		return resetsNoticed(t, regB) == 1 && resetsNoticed(t, regC) == 1
	})
	r := h.fetch(b, consumer, 1, 2*time.Second).GetMessages()
	if len(r) != 1 || r[0].GetMetadata().GetStreamSeq() != old.GetMetadata().GetStreamSeq() || r[0].GetMetadata().GetNumDelivered() != 1 {
		t.Fatalf("after the reset, through B: %v", r)
	}
	tp := h.tap()
	fs := ack(t, h, c, old.GetToken())
	if n := h.info(consumer).NumAckPending; n != 1 {
		t.Errorf("B's post-reset delivery is no longer pending on the server (%d pending): the stale Ack through C landed on it; failures %v", n, fs)
	}
	wantFailure(t, fs, 0, "LEASE_EXPIRED")
	tp.none(t, "the stale Ack")
}

// As above, through D, a replica started after the reset (a rolling
// restart, a scale-up): it noticed no reset itself, adopted the token, and
// its Ack landed on B's caller's delivery. B recorded the reset in the
// ledger when it noticed it, and D reads it there.
func TestAnAdoptedTokenFromBeforeAResetSettlesNothingOnAReplicaStartedSince(t *testing.T) {
	h := newHarness(t, ackWait(30*time.Second), withKeys(token.RandomKeyring()))
	regB := prometheus.NewRegistry()
	_, b, _ := h.startGatewayWith(regB)
	h.publish(1)
	old := h.fetchOne(time.Second) // through A
	h.gw.Close()                   // A goes away; its token stays in the caller's hands
	h.resetConsumer(consumer)
	natstest.Eventually(t, 5*time.Second, "B notices the reset", func() bool { return resetsNoticed(t, regB) == 1 })
	r := h.fetch(b, consumer, 1, 2*time.Second).GetMessages()
	if len(r) != 1 || r[0].GetMetadata().GetStreamSeq() != old.GetMetadata().GetStreamSeq() || r[0].GetMetadata().GetNumDelivered() != 1 {
		t.Fatalf("after the reset, through B: %v", r)
	}
	_, d, _ := h.startGateway() // D: started after the reset
	tp := h.tap()
	fs := ack(t, h, d, old.GetToken())
	if n := h.info(consumer).NumAckPending; n != 1 {
		t.Errorf("B's post-reset delivery is no longer pending on the server (%d pending): the stale Ack through D landed on it; failures %v", n, fs)
	}
	wantFailure(t, fs, 0, "LEASE_EXPIRED")
	tp.none(t, "the stale Ack")
}
