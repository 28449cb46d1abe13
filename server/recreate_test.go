package server_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/token"
)

// recreate deletes the consumer and makes it again under the same name, as
// an operator does with `nats consumer rm` and `nats consumer add`.
func (h *harness) recreate(name string, cfg jetstream.ConsumerConfig) jetstream.Consumer {
	h.t.Helper()
	if err := h.js.DeleteConsumer(h.ctx(), stream, name); err != nil {
		h.t.Fatalf("delete: %v", err)
	}
	cfg.Durable = name
	c, err := h.js.CreateConsumer(h.ctx(), stream, cfg)
	if err != nil {
		h.t.Fatalf("create: %v", err)
	}
	return c
}

// DESIGN 17: "A consumer that stops being servable (... deleted) is
// unbound: its leases void"; DESIGN 2: a late settle must not land on
// someone else's delivery. A configured consumer is deleted and made again
// with the same name (`nats consumer rm` + `nats consumer add`) while A
// holds a lease; another client (here nats.go) takes the new consumer's
// first delivery of the same message; the old token's Ack through its own,
// live issuer A must be LEASE_EXPIRED and send nothing. Before, A voided only
// if the info it asks after the create request passes is answered after the
// server applied the create; run with -count=30 (15 failed).
func TestADeletedConsumersTokensSettleNothingOfTheOneMadeAgain(t *testing.T) {
	h := newHarness(t, ackWait(30*time.Second), withKeys(token.RandomKeyring()))
	h.publish(1)
	old := h.fetchOne(time.Second) // through A
	plain := h.recreate(consumer, jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second})
	if md := takeOne(t, plain, 5*time.Second); md.NumDelivered != 1 || md.Sequence.Stream != old.GetMetadata().GetStreamSeq() {
		t.Fatalf("the nats.go client got %+v; want the new consumer's first delivery of the leased message", md)
	}
	tp := h.tap()
	fs := ack(t, h, h.cons, old.GetToken())
	if n := h.info(consumer).NumAckPending; n != 1 {
		t.Errorf("the other client's delivery of the new consumer is no longer pending (%d pending): the old consumer's token acked it; failures %v", n, fs)
	}
	wantFailure(t, fs, 0, "LEASE_EXPIRED")
	tp.none(t, "the stale Ack")
}
