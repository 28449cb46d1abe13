package server_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// DESIGN 17: "A lease's leaseDeadline is always a time at or before the
// server's redelivery of that delivery." An operator cuts ack_wait from 30s
// to 2s (nats consumer edit, through nats.go's UpdateConsumer on another
// connection); once the server has answered the update, a message is
// published and fetched through jetgate. The server redelivers it 2s after
// it sent it; the lease_deadline handed out must be no later than that.
// Twenty rounds (ack_wait put back to 30s between them, and jetgate's view
// of it refreshed through GetConsumer).
func TestALeaseTakenJustAfterAnAckWaitCutIsDatedByTheNewWait(t *testing.T) {
	h := newHarness(t, ackWait(30*time.Second))
	_ = h.fetch(h.cons, consumer, 1, 0) // bound
	setWait := func(w time.Duration) {
		cfg := h.info(consumer).Config
		cfg.AckWait = w
		if _, err := h.js.UpdateConsumer(h.ctx(), stream, cfg); err != nil {
			t.Fatal(err)
		}
	}
	bad := 0
	for round := range 20 {
		setWait(30 * time.Second)
		if _, err := h.cons.GetConsumer(h.ctx(), &jetgatev1.GetConsumerRequest{Stream: stream, Consumer: consumer}); err != nil {
			t.Fatal(err)
		}
		setWait(2 * time.Second)
		applied := time.Now() // the server applied the update before this
		h.publish(1)
		m := h.fetchOne(2 * time.Second)
		if got := m.GetLeaseDeadline().AsTime(); got.After(time.Now().Add(2 * time.Second)) {
			bad++
			t.Errorf("round %d: lease_deadline %v after the fetch, %v after the update was applied; the server's ack_wait is now 2s, so it redelivers before that",
				round, time.Until(got).Round(time.Millisecond), got.Sub(applied).Round(time.Millisecond))
		}
		_, _ = h.cons.Ack(h.ctx(), &jetgatev1.AckRequest{Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()}})
	}
	t.Logf("%d of 20 rounds handed out a lease_deadline past the server's redelivery", bad)
}

// An update request asking a longer ack_wait that the server refuses (it
// also asks to change deliver_policy) dates no lease by it (a reviewer's
// finding: a first form of the above promised 58s against the server's 2s,
// and the first caller's Ack then acked another client's redelivery).
func TestARefusedLongerUpdateDatesNothing(t *testing.T) {
	h := newHarness(t, ackWait(2*time.Second))
	_ = h.fetch(h.cons, consumer, 1, 0) // bound
	cfg := h.info(consumer).Config
	cfg.AckWait = time.Minute
	cfg.DeliverPolicy = jetstream.DeliverNewPolicy // deliver_policy cannot be updated
	body, _ := json.Marshal(map[string]any{"stream_name": stream, "config": cfg, "action": "update"})
	reply, err := h.nc.Request("$JS.API.CONSUMER.CREATE."+stream+"."+consumer, body, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(reply.Data), `"error"`) || h.info(consumer).Config.AckWait != 2*time.Second {
		t.Fatalf("the server took the update: %s", reply.Data)
	}
	h.publish(1)
	m := h.fetchOne(2 * time.Second)
	if left := time.Until(m.GetLeaseDeadline().AsTime()); left > 2*time.Second {
		t.Errorf("lease_deadline %v from now; the server, its ack_wait 2s, redelivers within 2s", left.Round(time.Millisecond))
	}
	plain, err := h.js.Consumer(h.ctx(), stream, consumer)
	if err != nil {
		t.Fatal(err)
	}
	if md := takeOne(t, plain, 10*time.Second); md.NumDelivered != 2 {
		t.Fatalf("the nats.go client got %+v; want the redelivery", md)
	}
	tp := h.tap()
	ar, err := h.cons.Ack(h.ctx(), &jetgatev1.AckRequest{Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()}})
	if err != nil {
		t.Fatalf("ack: %v", err)
	}
	if n := h.info(consumer).NumAckPending; n != 1 {
		t.Errorf("the stale Ack acked the nats.go client's redelivery; failures %v", ar.GetFailures())
	}
	wantFailure(t, ar.GetFailures(), 0, "LEASE_EXPIRED")
	tp.none(t, "the stale Ack")
}
