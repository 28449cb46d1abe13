package server_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/token"
)

// A reviewer's finding. DESIGN 2 / 17: a stale token must never settle another holder's
// delivery. A issues a lease, then goes away (a single-replica deployment
// restarting). While it is down the operator deletes the consumer and
// makes it again under the same name (nats consumer rm + add); a nats.go
// client takes the new consumer's first delivery of the same message. The
// restarted gateway D binds the new consumer and receives the old token's
// Ack: the issuer is gone, so D acts on the token alone. The token's start
// is before the consumer's creation (the info's created says so), so it
// must fail LEASE_EXPIRED and send nothing.
func TestAnAdoptedTokenOfAConsumerRemadeWhileNoReplicaRanSettlesNothing(t *testing.T) {
	h := newHarness(t, ackWait(30*time.Second), withKeys(token.RandomKeyring()))
	h.publish(1)
	old := h.fetchOne(time.Second) // through A
	h.gw.Close()                   // A goes away; its token stays in the caller's hands
	plain := h.recreate(consumer, jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second})
	if md := takeOne(t, plain, 5*time.Second); md.NumDelivered != 1 || md.Sequence.Stream != old.GetMetadata().GetStreamSeq() {
		t.Fatalf("the nats.go client got %+v; want the new consumer's first delivery of the leased message", md)
	}
	_, d, _ := h.startGateway() // D: the restarted gateway
	tp := h.tap()
	fs := ack(t, h, d, old.GetToken())
	if n := h.info(consumer).NumAckPending; n != 1 {
		t.Errorf("the nats.go client's delivery of the new consumer is no longer pending (%d pending): the old consumer's token acked it through D; failures %v", n, fs)
	}
	wantFailure(t, fs, 0, "LEASE_EXPIRED")
	tp.none(t, "the stale Ack")
}
