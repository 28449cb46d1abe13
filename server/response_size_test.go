package server_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// A response fits a default gRPC client's 4 MiB (DESIGN section 3) whatever
// its messages carry. Headers that are not UTF-8 go out about three times
// over (each lone invalid byte replaced by U+FFFD, three bytes, and the raw
// bytes beside them), past what the pull's max_bytes counted: 50 messages
// with a 60 KB header of alternating invalid bytes were a Fetch the client
// refused, and a Consume burst that ended the stream, its leases nak'ed, a
// delivery burnt each round.

// publishBinaryHeaders publishes n messages with a 60 KB header that is
// half bytes no UTF-8 has.
func publishBinaryHeaders(h *harness, n int) {
	v := make([]byte, 60_000)
	for i := range v {
		v[i] = "\xffa"[i%2]
	}
	for range n {
		m := nats.NewMsg("orders.bin")
		m.Header.Set("X-Bin", string(v))
		if _, err := h.js.PublishMsg(h.ctx(), m); err != nil {
			h.t.Fatal(err)
		}
	}
}

// What does not fit one Fetch is the next Fetch's, not delivered again,
// however long the caller works on each response (within the leases): a
// first version nak'ed it after a canceled Fetch's hold, 250ms.
func TestAFetchOfHeadersThatAreNotUTF8FitsADefaultClient(t *testing.T) {
	h := newHarness(t)
	publishBinaryHeaders(h, 50)
	seen := map[uint64]bool{}
	for fetches := 0; len(seen) < 50; fetches++ {
		if fetches == 50 {
			t.Fatalf("%d of 50 messages in 50 Fetches", len(seen))
		}
		if fetches > 0 {
			<-time.After(time.Second) // the caller's work on the last response
		}
		resp, err := h.cons.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: 50, Expires: durationpb.New(time.Second)})
		if err != nil {
			t.Fatalf("Fetch %d, with a default client: %v", fetches+1, err)
		}
		if size := proto.Size(resp); size > 4<<20 {
			t.Fatalf("Fetch %d: %d bytes", fetches+1, size)
		}
		for _, m := range resp.GetMessages() {
			if md := m.GetMetadata(); md.GetNumDelivered() != 1 || seen[md.GetStreamSeq()] {
				t.Fatalf("message %d again (delivery %d)", md.GetStreamSeq(), md.GetNumDelivered())
			}
			seen[m.GetMetadata().GetStreamSeq()] = true
		}
	}
}

// A Consume burst goes out in responses a default client reads.
func TestAConsumeBurstOfHeadersThatAreNotUTF8FitsADefaultClient(t *testing.T) {
	h := newHarness(t)
	publishBinaryHeaders(h, 50)
	cs := h.consume(h.cons, &jetgatev1.ConsumeRequest{MaxMessages: 100, Heartbeat: durationpb.New(time.Second)})
	seen := map[uint64]bool{}
	deadline := time.After(20 * time.Second)
	for len(seen) < 50 {
		select {
		case r, ok := <-cs.resps:
			if !ok {
				t.Fatalf("the stream ended after %d of 50 messages: %v", len(seen), <-cs.done)
			}
			for _, m := range r.GetMessages() {
				if md := m.GetMetadata(); md.GetNumDelivered() != 1 || seen[md.GetStreamSeq()] {
					t.Fatalf("message %d again (delivery %d)", md.GetStreamSeq(), md.GetNumDelivered())
				}
				seen[m.GetMetadata().GetStreamSeq()] = true
			}
		case <-deadline:
			t.Fatalf("%d of 50 messages within 20s", len(seen))
		}
	}
}

// The rest of a pinned caller's Fetch is for its next Fetch, the one that
// names its pin: a caller without the pin took it, and the pin with it, and
// two callers held the group's pin at once.
func TestTheRestOfAPinnedFetchIsForThePin(t *testing.T) {
	o := newOperated(t, jetstream.ConsumerConfig{Durable: "pinned", PriorityGroups: []string{"main"},
		PriorityPolicy: jetstream.PriorityPolicyPinned, PinnedTTL: time.Minute}, 1)
	publishBinaryHeaders(o.harness, 50)
	c := o.replicas[0]
	first, err := o.fetch(t, c, &jetgatev1.FetchRequest{Batch: 50, Expires: durationpb.New(time.Second)})
	if err != nil || first.GetPinId() == "" || len(first.GetMessages()) == 0 || len(first.GetMessages()) == 50 {
		t.Fatalf("first Fetch: %d messages, pin %q, %v; want some of 50 and a pin", len(first.GetMessages()), first.GetPinId(), err)
	}
	other, err := o.fetch(t, c, &jetgatev1.FetchRequest{Batch: 50})
	if err != nil || len(other.GetMessages()) != 0 || other.GetPinId() != "" {
		t.Fatalf("a Fetch without the pin: %d messages, pin %q, %v; want none", len(other.GetMessages()), other.GetPinId(), err)
	}
	seen := len(first.GetMessages())
	for fetches := 0; seen < 50; fetches++ {
		if fetches == 10 {
			t.Fatalf("%d of 50 messages", seen)
		}
		r, err := o.fetch(t, c, &jetgatev1.FetchRequest{Batch: 50, PinId: first.GetPinId(), Expires: durationpb.New(time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range r.GetMessages() {
			if m.GetMetadata().GetNumDelivered() != 1 {
				t.Fatalf("message %d delivered again", m.GetMetadata().GetStreamSeq())
			}
		}
		seen += len(r.GetMessages())
	}
}
