package server_test

import (
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/token"
)

// DESIGN 17 ("a restart may change it through jetgate's own flags.
// jetgate's promises must follow"; "the redelivery timing ... never from a
// view taken before them") and DESIGN 2 (a late settle must not land on
// someone else's redelivery). jetgate runs with ack_wait 60s; a caller holds
// a lease. The deployment is restarted with ack_wait 2s (two replicas, B and
// C): the server now redelivers after 2s, B hands the redelivery to another
// caller, and the first caller's Ack arrives through C. The issuer is gone,
// so C acts on the token alone: it trusted the 60s deadline the token
// carries, and acked B's caller's redelivery. The token says when its lease
// started, and C dates it by the ack_wait now.
func TestAnAdoptedTokenIsDatedByTheTimingNow(t *testing.T) {
	h := newHarness(t, ackWait(60*time.Second), withKeys(token.RandomKeyring()))
	h.publish(1)
	old := h.fetchOne(time.Second) // through A, a lease of about 58s
	if left := time.Until(old.GetLeaseDeadline().AsTime()); left < 50*time.Second {
		t.Fatalf("lease of %v; want about 58s", left)
	}
	h.gw.Close() // the rolling restart: A goes
	h.cfg.ackWait = 2 * time.Second
	_, b, _ := h.startGateway() // ... and B and C come with ack_wait 2s
	_, c, _ := h.startGateway()
	if got := h.info(consumer).Config.AckWait; got != 2*time.Second {
		t.Fatalf("ack_wait on the server after the restart: %v", got)
	}
	r := h.fetch(b, consumer, 1, 5*time.Second).GetMessages()
	if len(r) != 1 || r[0].GetMetadata().GetStreamSeq() != old.GetMetadata().GetStreamSeq() || r[0].GetMetadata().GetNumDelivered() != 2 {
		t.Fatalf("through B after the restart: %v; want the redelivery", r)
	}
	tp := h.tap()
	fs := ack(t, h, c, old.GetToken())
	if n := h.info(consumer).NumAckPending; n != 1 {
		t.Errorf("B's redelivery is no longer pending on the server (%d pending): the old token's Ack through C landed on it; failures %v", n, fs)
	}
	wantFailure(t, fs, 0, "LEASE_EXPIRED")
	tp.none(t, "the stale Ack")
}
