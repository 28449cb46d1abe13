package server_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// DESIGN 17: "A lease's leaseDeadline is always a time at or before the
// server's redelivery of that delivery." A Fetch pulls fifty messages with 60 KB headers that are half invalid UTF-8;
// what does not fit its 4 MiB response is kept for the next Fetch (the
// orphan pool's spare). An operator then cuts ack_wait from 30s to 5s with
// nats.go's UpdateConsumer (as `nats consumer edit` would). The next Fetch,
// taken at once, hands out the kept messages: their lease_deadline must be
// no later than receipt + 5s, since the server redelivers them then.
func TestTheRestOfAFetchHandedOutAfterAnAckWaitCutIsDatedByIt(t *testing.T) {
	h := newHarness(t, ackWait(30*time.Second))
	publishBinaryHeaders(h, 50) // each counted four times over in a response: what was pulled does not fit
	first, err := h.cons.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: 50, Expires: durationpb.New(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	received := time.Now() // every message of the pull was received before this
	if n := len(first.GetMessages()); n == 0 || n == 50 {
		t.Fatalf("first Fetch: %d messages; want some, the rest kept", n)
	}
	cfg := h.info(consumer).Config
	cfg.AckWait = 5 * time.Second
	if _, err := h.js.UpdateConsumer(h.ctx(), stream, cfg); err != nil {
		t.Fatal(err)
	}
	second, err := h.cons.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: 50, Expires: durationpb.New(0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(second.GetMessages()) == 0 {
		t.Fatalf("second Fetch: nothing (%v); want the rest of the first", second.GetEmptyReason())
	}
	var kept *jetgatev1.Message
	for _, m := range second.GetMessages() {
		dl := m.GetLeaseDeadline().AsTime()
		if dl.After(received.Add(5*time.Second)) && kept == nil {
			kept = m
			t.Errorf("message %d (delivery %d): lease_deadline %v after its receipt; the server's ack_wait is now 5s",
				m.GetMetadata().GetStreamSeq(), m.GetMetadata().GetNumDelivered(), dl.Sub(received).Round(time.Millisecond))
		}
	}
	if kept == nil {
		return
	}
	// Proof: the server redelivers it while the lease handed out still has
	// (by its lease_deadline) a long time to run.
	var again *jetgatev1.Message
	natstest.Eventually(t, 15*time.Second, "the server's redelivery", func() bool {
		r, err := h.cons.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: 50, Expires: durationpb.New(500 * time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range r.GetMessages() {
			if m.GetMetadata().GetStreamSeq() == kept.GetMetadata().GetStreamSeq() {
				again = m
			}
		}
		return again != nil
	})
	t.Logf("redelivered (delivery %d) %v after receipt; the first holder's lease_deadline still %v away",
		again.GetMetadata().GetNumDelivered(), time.Since(received).Round(time.Millisecond), time.Until(kept.GetLeaseDeadline().AsTime()).Round(time.Millisecond))
	fs := ack(t, h, h.cons, kept.GetToken())
	wantFailure(t, fs, 0, "LEASE_EXPIRED")
}
