package server_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
)

// rounds is how many times each race below is run: without the lock one
// change was lost in 29 rounds of 30.
const rounds = 40

// together runs each f at once (released by one close) and waits for all.
func together(fs ...func()) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, f := range fs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			f()
		}()
	}
	close(start)
	wg.Wait()
}

// Two PATCHes of one consumer at once, of different fields, through two
// replicas: both answer OK, so both changes must be on the server (each
// reads the whole config and writes it back, and the server's update has
// no compare-and-set: jetgate serializes them).
func TestConcurrentUpdatesOfOneConsumerLoseNoChange(t *testing.T) {
	h := newHarness(t)
	gws := h.adminGateways(2, coreconsumer.Admin{})
	if _, err := create(h, gws[0], &jetgatev1.ConsumerConfig{DurableName: "team-race", AckWait: durationpb.New(time.Minute)}); err != nil {
		t.Fatalf("create: %v", err)
	}
	update := func(c jetgatev1.ConsumerServiceClient, cfg *jetgatev1.ConsumerConfig, path string) error {
		_, err := c.UpdateConsumer(h.ctx(), &jetgatev1.UpdateConsumerRequest{Stream: stream, Consumer: "team-race",
			Config: cfg, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{path}}})
		return err
	}
	lost := 0
	for i := range rounds {
		ackWait, desc := time.Duration(10+i)*time.Second, fmt.Sprintf("round %d", i)
		var errA, errB error
		together(
			func() { errA = update(gws[0], &jetgatev1.ConsumerConfig{AckWait: durationpb.New(ackWait)}, "ack_wait") },
			func() { errB = update(gws[1], &jetgatev1.ConsumerConfig{Description: desc}, "description") },
		)
		if errA != nil || errB != nil {
			t.Fatalf("round %d: ack_wait through A: %v; description through B: %v", i, errA, errB)
		}
		info, err := h.js.Consumer(h.ctx(), stream, "team-race")
		if err != nil {
			t.Fatal(err)
		}
		if c := info.CachedInfo().Config; c.AckWait != ackWait || c.Description != desc {
			lost++
			t.Errorf("round %d: both updates answered OK; the server has ack_wait %v (want %v) and description %q (want %q)",
				i, c.AckWait, ackWait, c.Description, desc)
		}
	}
	if lost > 0 {
		t.Errorf("a change was lost in %d rounds of %d", lost, rounds)
	}
}

// An update racing a delete and a create again of the same name (another
// principal's consumer now): the update applies to the old consumer (then
// gone) or to the new one, or finds none; it never writes the old
// consumer's configuration, its creator and create id, onto the new one.
func TestAnUpdateRacingADeleteAndCreateAgainNeverWritesTheOldConsumer(t *testing.T) {
	h := newHarness(t)
	gws := h.adminGateways(2, coreconsumer.Admin{})
	made, err := create(h, gws[0], &jetgatev1.ConsumerConfig{DurableName: "team-again", AckWait: durationpb.New(time.Minute)})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	old := 0
	for i := range rounds {
		var errU, errD, errC error
		var again *jetgatev1.CreateConsumerResponse
		together(
			func() {
				_, errU = gws[0].UpdateConsumer(h.ctx(), &jetgatev1.UpdateConsumerRequest{Stream: stream, Consumer: "team-again",
					Config: &jetgatev1.ConsumerConfig{Description: fmt.Sprintf("round %d", i)}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"description"}}})
			},
			func() {
				if _, errD = gws[1].DeleteConsumer(h.ctx(), &jetgatev1.DeleteConsumerRequest{Stream: stream, Consumer: "team-again"}); errD != nil {
					return
				}
				again, errC = create(h, gws[1], &jetgatev1.ConsumerConfig{DurableName: "team-again", AckWait: durationpb.New(2 * time.Minute)})
			},
		)
		if errD != nil || errC != nil || errU != nil && codeOf(errU) != codes.NotFound {
			t.Fatalf("round %d: update: %v; delete: %v; create again: %v", i, errU, errD, errC)
		}
		info, err := h.js.Consumer(h.ctx(), stream, "team-again")
		if err != nil {
			t.Fatal(err)
		}
		c := info.CachedInfo().Config
		if id := again.GetConfig().GetMetadata()[coreconsumer.CreateID]; c.Metadata[coreconsumer.CreateID] != id || c.AckWait != 2*time.Minute {
			old++
			t.Errorf("round %d: the consumer made again has create id %q and ack_wait %v; want its own, %q, and 2m (the old one's was %q, 1m)",
				i, c.Metadata[coreconsumer.CreateID], c.AckWait, id, made.GetConfig().GetMetadata()[coreconsumer.CreateID])
		}
		made = again
		// Back to the old ack_wait, so that a stale write shows.
		if _, err := gws[1].UpdateConsumer(h.ctx(), &jetgatev1.UpdateConsumerRequest{Stream: stream, Consumer: "team-again",
			Config: &jetgatev1.ConsumerConfig{AckWait: durationpb.New(time.Minute)}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"ack_wait"}}}); err != nil {
			t.Fatal(err)
		}
	}
	if old > 0 {
		t.Errorf("the old consumer was written onto the new in %d rounds of %d", old, rounds)
	}
}
