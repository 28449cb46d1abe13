package server_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// DESIGN 17 "Extend by the length asked": a lease extended by 12s is kept
// alive by its issuer (+WPI before each server deadline). An operator cuts
// ack_wait from 30s to 3s right after the Extend: the keep-alive must follow
// the server's new wait, so the server never redelivers the message before
// the deadline the Extend promised, and the caller's token acks it then.
func TestAnExtendsDurationIsKeptAliveThroughAnAckWaitCut(t *testing.T) {
	h := newHarness(t, ackWait(30*time.Second))
	h.publish(1)
	m := h.fetchOne(time.Second)
	ext, err := h.cons.Extend(h.ctx(), &jetgatev1.ExtendRequest{Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()}, Duration: durationpb.New(12 * time.Second)})
	if err != nil || len(ext.GetFailures()) != 0 {
		t.Fatalf("extend: %v %v", ext, err)
	}
	promised := ext.GetLeases()[0].GetLeaseDeadline().AsTime()
	cfg := h.info(consumer).Config
	cfg.AckWait = 3 * time.Second
	if _, err := h.js.UpdateConsumer(h.ctx(), stream, cfg); err != nil {
		t.Fatal(err)
	}
	// A nats.go client pulls all along: it gets the message only if the
	// server redelivers it.
	plain, err := h.js.Consumer(h.ctx(), stream, consumer)
	if err != nil {
		t.Fatal(err)
	}
	for time.Until(promised) > time.Second {
		b, err := plain.Fetch(1, jetstream.FetchMaxWait(time.Until(promised)-time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for x := range b.Messages() {
			md, _ := x.Metadata()
			t.Errorf("the server redelivered seq %d (delivery %d) %v before the Extend's lease_deadline",
				md.Sequence.Stream, md.NumDelivered, time.Until(promised).Round(time.Millisecond))
			// The caller's token must not settle the nats.go client's
			// delivery.
			wantFailure(t, ack(t, h, h.cons, ext.GetLeases()[0].GetNewToken()), 0, "LEASE_EXPIRED")
			if ci := h.info(consumer); ci.NumAckPending != 1 {
				t.Errorf("the nats.go client's delivery was settled by the old token: ack pending %d", ci.NumAckPending)
			}
			return
		}
	}
	wantNoFailures(t, ack(t, h, h.cons, ext.GetLeases()[0].GetNewToken()))
	if ci := h.info(consumer); ci.NumAckPending != 0 || ci.NumRedelivered != 0 {
		t.Errorf("after the ack: ack pending %d, redelivered %d; want 0, 0", ci.NumAckPending, ci.NumRedelivered)
	}
}

// An Extend by 12s on a 30s ack_wait is cut to 12s (the server's deadline
// is later). An operator then cuts ack_wait to 10s: the server now
// redelivers 10s after the Extend's +WPI. An Ack sent at once, well within
// those 10s, must settle the lease: the caller holds it and the server has
// redelivered nothing.
func TestALeaseCutToAnExtendsDurationLastsUntilTheServersNewDeadline(t *testing.T) {
	h := newHarness(t, ackWait(30*time.Second))
	h.publish(1)
	m := h.fetchOne(time.Second)
	ext, err := h.cons.Extend(h.ctx(), &jetgatev1.ExtendRequest{Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()}, Duration: durationpb.New(12 * time.Second)})
	if err != nil || len(ext.GetFailures()) != 0 {
		t.Fatalf("extend: %v %v", ext, err)
	}
	extended := time.Now()
	cfg := h.info(consumer).Config
	cfg.AckWait = 10 * time.Second
	if _, err := h.js.UpdateConsumer(h.ctx(), stream, cfg); err != nil {
		t.Fatal(err)
	}
	fs := ack(t, h, h.cons, ext.GetLeases()[0].GetNewToken())
	t.Logf("ack %v after the Extend", time.Since(extended).Round(time.Millisecond))
	wantNoFailures(t, fs)
	if ci := h.info(consumer); ci.NumAckPending != 0 || ci.NumRedelivered != 0 {
		t.Errorf("after the ack: ack pending %d, redelivered %d; want 0, 0", ci.NumAckPending, ci.NumRedelivered)
	}
}
