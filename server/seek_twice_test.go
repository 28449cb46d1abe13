package server_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// Two seeks within a second, through either replica, while Fetches wait on
// both: no token from before the second, from before the first either,
// settles a delivery made after it, whichever replica its Ack goes to.
func TestTwoSeeksWithinASecondLeaveNoTokenFromBeforeToSettle(t *testing.T) {
	h := newHarness(t) // ack_wait 30s; replica A is h.cons
	_, b, _ := h.startGateway()
	replicas := []jetgatev1.ConsumerServiceClient{h.cons, b}
	seqs := h.publish(10)
	old := h.fetchN(h.cons, len(seqs)) // A's, from before both seeks
	var before [][]*jetgatev1.Message
	for round := range 2 {
		var waiting []<-chan *jetgatev1.FetchResponse
		for i := range 6 {
			waiting = append(waiting, h.waitingOn(replicas[i%2], consumer, &jetgatev1.FetchRequest{Batch: 1}, i+1))
		}
		if _, err := h.seek(replicas[1-round], seekSeq(seqs[0])); err != nil {
			t.Fatalf("seek %d: %v", round+1, err)
		}
		got := collect(waiting)
		got = append(got, h.fetchN(replicas[round], len(seqs)-len(got))...)
		before = append(before, got)
	}
	after := before[1] // the second seek's
	for i, stale := range [][]*jetgatev1.Message{old, before[0]} {
		for j, c := range replicas {
			toks := make([]string, len(stale))
			for k, m := range stale {
				toks[k] = m.GetToken()
			}
			if fs := ack(t, h, c, toks...); len(fs) != len(toks) {
				t.Errorf("tokens of round %d (0: before both seeks), acked through replica %d: %d of %d refused, want all", i, j, len(fs), len(toks))
			}
		}
	}
	if ci := h.info(consumer); ci.NumAckPending != len(seqs) {
		t.Fatalf("num_ack_pending %d after the stale Acks, want %d: a stale token settled a delivery made after the second seek", ci.NumAckPending, len(seqs))
	}
	wantEach(t, after, seqs)
	ackAll(t, h, b, after)
	if ci := h.info(consumer); ci.NumAckPending != 0 {
		t.Errorf("num_ack_pending %d once the second seek's deliveries were acked, want 0", ci.NumAckPending)
	}
}

// A seek, then within a second the consumer deleted and made again under
// its name: no token from before either, acked through either replica,
// settles a delivery of the new consumer.
func TestASeekThenARemakeWithinASecondLeaveNoTokenFromBeforeToSettle(t *testing.T) {
	h := newHarness(t) // ack_wait 30s; replica A is h.cons
	_, b, _ := h.startGateway()
	replicas := []jetgatev1.ConsumerServiceClient{h.cons, b}
	seqs := h.publish(10)
	old := h.fetchN(h.cons, len(seqs))
	var waiting []<-chan *jetgatev1.FetchResponse
	for i := range 6 {
		waiting = append(waiting, h.waitingOn(replicas[i%2], consumer, &jetgatev1.FetchRequest{Batch: 1}, i+1))
	}
	if _, err := h.seek(b, seekSeq(seqs[0])); err != nil {
		t.Fatalf("seek: %v", err)
	}
	mid := collect(waiting)
	mid = append(mid, h.fetchN(h.cons, len(seqs)-len(mid))...)
	h.recreate(consumer, jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second})
	after := h.fetchN(b, 5)
	after = append(after, h.fetchN(h.cons, 5)...)
	for i, stale := range [][]*jetgatev1.Message{old, mid} {
		for j, c := range replicas {
			toks := make([]string, len(stale))
			for k, m := range stale {
				toks[k] = m.GetToken()
			}
			if fs := ack(t, h, c, toks...); len(fs) != len(toks) {
				t.Errorf("tokens of round %d (0: before the seek), acked through replica %d: %d of %d refused, want all", i, j, len(fs), len(toks))
			}
		}
	}
	if ci := h.info(consumer); ci.NumAckPending != len(seqs) {
		t.Fatalf("num_ack_pending %d after the stale Acks, want %d: a stale token settled a delivery of the consumer made again", ci.NumAckPending, len(seqs))
	}
	wantEach(t, after, seqs)
	ackAll(t, h, h.cons, after)
	if ci := h.info(consumer); ci.NumAckPending != 0 {
		t.Errorf("num_ack_pending %d once the new consumer's deliveries were acked, want 0", ci.NumAckPending)
	}
}

// Two resets while the lease holder's connection is cut, the second's
// delivery taken by a nats.go client before it comes back (as many
// deliveries as it had received: its info shows nothing; the ledger's
// record of the resets, written by the replica that heard them, does): the
// old token's Ack through its issuer settles nothing.
func TestTwoResetsWhileTheHolderWasAwayLeaveItsTokenToSettleNothing(t *testing.T) {
	h := newHarness(t, ackWait(30*time.Second))
	var md jetstream.MsgMetadata
	a := leaseThenAway(t, h, func() {
		h.resetConsumer(consumer)
		h.resetConsumer(consumer)
		plain, err := h.js.Consumer(h.ctx(), stream, consumer)
		if err != nil {
			t.Fatal(err)
		}
		md = takeOne(t, plain, 5*time.Second)
	})
	if md.NumDelivered != 1 || md.Sequence.Stream != a.old.GetMetadata().GetStreamSeq() {
		t.Fatalf("the nats.go client got %+v; want the second reset's delivery of the leased message", md)
	}
	a.staleAckSettlesNothing(t, h, 1)
}
