package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// DESIGN 17: a consumer that stops being servable answers CONSUMER_NOT_FOUND
// with the reason. A reviewer found that only Fetch and Consume did: made
// again without explicit acks, the consumer was still described by
// GetConsumer, paused and reset through jetgate. Every call on it is now
// refused so, and the Pause reaches nothing.
func TestAConsumerNoLongerServableIsRefusedByEveryCall(t *testing.T) {
	h := newHarness(t)
	h.publish(1)
	h.recreate(consumer, jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy})
	refused := func(what string, err error) bool {
		t.Helper()
		c, reason := codeAndReason(err)
		return c == codes.NotFound && reason == "CONSUMER_NOT_FOUND" && strings.Contains(statusMessage(err), "explicit acks")
	}
	natstest.Eventually(t, 10*time.Second, "a Fetch refused for the ack policy", func() bool {
		_, err := h.cons.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: 1})
		return refused("Fetch", err)
	})
	_, err := h.cons.GetConsumer(h.ctx(), &jetgatev1.GetConsumerRequest{Stream: stream, Consumer: consumer})
	calls := map[string]error{"GetConsumer": err}
	_, calls["Pause"] = h.cons.Pause(h.ctx(), &jetgatev1.PauseRequest{Stream: stream, Consumer: consumer, PauseUntil: timestamppb.New(time.Now().Add(time.Hour))})
	_, calls["Resume"] = h.cons.Resume(h.ctx(), &jetgatev1.ResumeRequest{Stream: stream, Consumer: consumer})
	_, calls["Unpin"] = h.cons.Unpin(h.ctx(), &jetgatev1.UnpinRequest{Stream: stream, Consumer: consumer})
	_, calls["Seek to the ack floor"] = h.cons.Seek(h.ctx(), &jetgatev1.SeekRequest{Stream: stream, Consumer: consumer, Target: &jetgatev1.SeekRequest_AckFloor{AckFloor: true}})
	_, calls["Seek to a sequence"] = h.cons.Seek(h.ctx(), &jetgatev1.SeekRequest{Stream: stream, Consumer: consumer, Target: &jetgatev1.SeekRequest_Sequence{Sequence: 1}})
	for what, err := range calls {
		if !refused(what, err) {
			t.Errorf("%s of a consumer without explicit acks: %v; want NOT_FOUND CONSUMER_NOT_FOUND saying why", what, err)
		}
	}
	if ci := h.info(consumer); ci.Paused {
		t.Error("jetgate paused a consumer it cannot serve")
	}
}
