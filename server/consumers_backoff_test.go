package server_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
)

// With backoff, the server takes its first step as the ack_wait, whatever
// ack_wait says: a create asking ack_wait 20s with backoff [1s, 2s] was made
// with 1s, and an update of ack_wait alone on a consumer with backoff
// answered OK and changed nothing. An ack_wait asked for that is not the
// first step is refused now, naming it.
func TestAnAckWaitBackoffOverridesIsRefused(t *testing.T) {
	h := newHarness(t)
	a := h.adminGateways(1, coreconsumer.Admin{})[0]
	steps := []*durationpb.Duration{durationpb.New(time.Second), durationpb.New(2 * time.Second)}
	_, err := create(h, a, &jetgatev1.ConsumerConfig{DurableName: "team-b", AckWait: durationpb.New(20 * time.Second), MaxDeliver: 3, Backoff: steps})
	wantFirstStep(t, err)
	if _, err := h.js.Consumer(h.ctx(), stream, "team-b"); err == nil {
		t.Fatal("a refused create made the consumer")
	}
	// Left out, or the first step, it is taken.
	for _, cfg := range []*jetgatev1.ConsumerConfig{
		{DurableName: "team-b", MaxDeliver: 3, Backoff: steps},
		{DurableName: "team-c", AckWait: durationpb.New(time.Second), MaxDeliver: 3, Backoff: steps},
	} {
		r, err := create(h, a, cfg)
		if err != nil {
			t.Fatalf("create %s: %v", cfg.GetDurableName(), err)
		}
		if d := r.GetConfig().GetAckWait().AsDuration(); d != time.Second {
			t.Errorf("%s: ack_wait %v; want the first step, 1s", cfg.GetDurableName(), d)
		}
	}
	update := func(cfg *jetgatev1.ConsumerConfig, paths ...string) error {
		_, err := a.UpdateConsumer(h.ctx(), &jetgatev1.UpdateConsumerRequest{Stream: stream, Consumer: "team-b", Config: cfg, UpdateMask: &fieldmaskpb.FieldMask{Paths: paths}})
		return err
	}
	wantFirstStep(t, update(&jetgatev1.ConsumerConfig{AckWait: durationpb.New(10 * time.Second)}, "ack_wait"))
	wantFirstStep(t, update(&jetgatev1.ConsumerConfig{AckWait: durationpb.New(time.Second), Backoff: []*durationpb.Duration{durationpb.New(5 * time.Second)}}, "ack_wait", "backoff"))
	if ci := h.info("team-b"); ci.Config.AckWait != time.Second || len(ci.Config.BackOff) != 2 {
		t.Errorf("refused updates changed the consumer: ack_wait %v, backoff %v", ci.Config.AckWait, ci.Config.BackOff)
	}
	// Both together, or the backoff cleared, it is taken.
	if err := update(&jetgatev1.ConsumerConfig{AckWait: durationpb.New(5 * time.Second), Backoff: []*durationpb.Duration{durationpb.New(5 * time.Second)}}, "ack_wait", "backoff"); err != nil {
		t.Fatalf("ack_wait the first step of the new backoff: %v", err)
	}
	if err := update(&jetgatev1.ConsumerConfig{AckWait: durationpb.New(10 * time.Second)}, "ack_wait", "backoff"); err != nil {
		t.Fatalf("ack_wait with the backoff cleared: %v", err)
	}
	if ci := h.info("team-b"); ci.Config.AckWait != 10*time.Second || len(ci.Config.BackOff) != 0 {
		t.Errorf("ack_wait %v, backoff %v; want 10s and none", ci.Config.AckWait, ci.Config.BackOff)
	}
}

func wantFirstStep(t *testing.T, err error) {
	t.Helper()
	wantCode(t, err, codes.InvalidArgument, "INVALID_ARGUMENT")
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "backoff") || !strings.Contains(msg, "first step") {
		t.Errorf("refusal %q: want it to say the server takes backoff's first step as the ack_wait", msg)
	}
}
