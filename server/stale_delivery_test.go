package server_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
)

// After a Seek, or a consumer deleted and made again, the server delivers a
// message anew with its consumer sequence and delivery count restarted (1
// and 1): a token of the earlier delivery names the same numbers. Its start
// tells them apart (token version 4): a token from before the new delivery
// was received settles nothing, however long an Extend made it last or
// however much shorter the new ack_wait is, where the deadline alone let it
// ack the new delivery (README: "a token from before the seek settles
// nothing (LEASE_EXPIRED)").

// A lease kept alive by an Extend with a duration, then a Seek back over
// its message: the kept-alive token acked through its issuer, or through a
// replica that did not issue it.
func TestAKeptAliveTokenFromBeforeASeekSettlesNothing(t *testing.T) {
	for _, other := range []bool{false, true} {
		t.Run(map[bool]string{false: "the issuer", true: "another replica"}[other], func(t *testing.T) {
			h := newHarness(t)
			via := h.cons
			if other {
				_, via, _ = h.startGateway()
			}
			seqs := h.publish(1)
			m := h.fetchOne(time.Second)
			e, err := h.cons.Extend(h.ctx(), &jetgatev1.ExtendRequest{Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()}, Duration: durationpb.New(10 * time.Minute)})
			if err != nil || len(e.GetFailures()) != 0 {
				t.Fatalf("extend: %v %v", err, e.GetFailures())
			}
			kept := e.GetLeases()[0].GetNewToken()
			if _, err := h.seek(h.cons, seekSeq(seqs[0])); err != nil {
				t.Fatalf("seek: %v", err)
			}
			again := h.fetchOne(2 * time.Second)
			t.Logf("after the seek: seq %d cseq %d delivered %d", again.GetMetadata().GetStreamSeq(), again.GetMetadata().GetConsumerSeq(), again.GetMetadata().GetNumDelivered())
			tp := h.tap()
			wantFailure(t, ack(t, h, via, kept), 0, "LEASE_EXPIRED")
			tp.none(t, "the stale Ack of the kept-alive token")
			if n := h.info(consumer).NumAckPending; n != 1 {
				t.Errorf("ack pending %d; want 1: the token from before the seek acked the delivery made after it", n)
			}
		})
	}
}

// The same with the ack_wait shortened through UpdateConsumer between the
// lease and the Seek (no Extend): the old token's deadline is past the new
// delivery's first deadline.
func TestATokenFromBeforeASeekAndAShorterAckWaitSettlesNothing(t *testing.T) {
	h := newHarness(t)
	a := h.adminGateways(1, coreconsumer.Admin{MaxAckWait: time.Hour})[0]
	if _, err := create(h, a, &jetgatev1.ConsumerConfig{DurableName: "team-s", AckWait: durationpb.New(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	seqs := h.publish(1)
	old := h.fetch(a, "team-s", 1, 2*time.Second).GetMessages()
	if len(old) != 1 {
		t.Fatal("no message")
	}
	if _, err := a.UpdateConsumer(h.ctx(), &jetgatev1.UpdateConsumerRequest{Stream: stream, Consumer: "team-s",
		Config: &jetgatev1.ConsumerConfig{AckWait: durationpb.New(10 * time.Second)}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"ack_wait"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Seek(h.ctx(), &jetgatev1.SeekRequest{Stream: stream, Consumer: "team-s", Target: &jetgatev1.SeekRequest_Sequence{Sequence: seqs[0]}}); err != nil {
		t.Fatalf("seek: %v", err)
	}
	again := h.fetch(a, "team-s", 1, 2*time.Second).GetMessages()
	if len(again) != 1 {
		t.Fatal("no message after the seek")
	}
	r, err := a.Ack(h.ctx(), &jetgatev1.AckRequest{Stream: stream, Consumer: "team-s", Tokens: []string{old[0].GetToken()}})
	if err != nil {
		t.Fatal(err)
	}
	wantFailure(t, r.GetFailures(), 0, "LEASE_EXPIRED")
	if n := h.info("team-s").NumAckPending; n != 1 {
		t.Errorf("ack pending %d; want 1: the token from before the seek acked the delivery made after it", n)
	}
}

// A consumer deleted and made again through the API, with the same ack_wait
// or a shorter one, the old token acked through the replica that holds the
// new delivery.
func TestATokenOfADeletedConsumerSettlesNothingOfTheOneMadeAgainWhateverItsWait(t *testing.T) {
	for _, wait := range []time.Duration{time.Hour, 2 * time.Second} {
		t.Run(wait.String(), func(t *testing.T) { recreatedTokenSettlesNothing(t, wait) })
	}
}

func recreatedTokenSettlesNothing(t *testing.T, wait time.Duration) {
	h := newHarness(t)
	gws := h.adminGateways(2, coreconsumer.Admin{MaxAckWait: time.Hour})
	a, b := gws[0], gws[1]
	mk := func(w time.Duration) {
		if _, err := create(h, a, &jetgatev1.ConsumerConfig{DurableName: "team-x", AckWait: durationpb.New(w)}); err != nil {
			t.Fatalf("create: %v", err)
		}
	}
	mk(time.Hour)
	h.publish(1)
	old := h.fetch(b, "team-x", 1, 2*time.Second).GetMessages()
	if len(old) != 1 {
		t.Fatal("no message")
	}
	if _, err := a.DeleteConsumer(h.ctx(), &jetgatev1.DeleteConsumerRequest{Stream: stream, Consumer: "team-x"}); err != nil {
		t.Fatal(err)
	}
	mk(wait)
	r, err := b.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: "team-x", Batch: 1, Expires: durationpb.New(2 * time.Second)})
	if err != nil {
		t.Logf("fetch on B after recreate: %v", err)
		r, err = b.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: "team-x", Batch: 1, Expires: durationpb.New(2 * time.Second)})
		if err != nil {
			t.Fatalf("second fetch: %v", err)
		}
	}
	if len(r.GetMessages()) != 1 {
		t.Fatalf("fetch on B after recreate: %d messages", len(r.GetMessages()))
	}
	if d := time.Until(r.GetMessages()[0].GetLeaseDeadline().AsTime()); d > wait {
		t.Errorf("B's lease of the new consumer runs %v; the new consumer's ack_wait is %v (the server redelivers then)", d, wait)
	}
	ar, err := b.Ack(h.ctx(), &jetgatev1.AckRequest{Stream: stream, Consumer: "team-x", Tokens: []string{old[0].GetToken()}})
	if err == nil {
		wantFailure(t, ar.GetFailures(), 0, "LEASE_EXPIRED")
	} else {
		t.Logf("old token ack: %v", err)
	}
	if n := h.info("team-x").NumAckPending; n != 1 {
		t.Errorf("ack pending %d; want 1 (the old token acked the new delivery?)", n)
	}
}
