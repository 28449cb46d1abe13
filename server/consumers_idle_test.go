package server_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
)

// A consumer made before the admin block bound inactive_threshold has
// none: the server never deletes it unused. An update that did not name
// the field (a description, or the config sent back as read) gave it the
// bound unsaid, and the server then deleted it after that long unused; a
// create asking 0s, none, got the bound. Both are refused now, naming the
// bound, and nothing changes.
func TestNoInactiveThresholdUnderABoundIsRefused(t *testing.T) {
	h := newHarness(t)
	free := h.adminGateways(1, coreconsumer.Admin{})[0]
	r, err := create(h, free, &jetgatev1.ConsumerConfig{DurableName: "team-old", InactiveThreshold: durationpb.New(0)})
	if err != nil {
		t.Fatal(err)
	}
	if r.GetConfig().GetInactiveThreshold() != nil {
		t.Fatalf("0s asked without a bound: inactive_threshold %v; want none", r.GetConfig().GetInactiveThreshold().AsDuration())
	}
	bounded := h.adminGateways(1, coreconsumer.Admin{InactiveThreshold: time.Hour})[0]
	got, err := bounded.GetConsumer(h.ctx(), &jetgatev1.GetConsumerRequest{Stream: stream, Consumer: "team-old"})
	if err != nil {
		t.Fatal(err)
	}
	for _, up := range []*jetgatev1.UpdateConsumerRequest{
		{Config: &jetgatev1.ConsumerConfig{Description: "only this"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"description"}}},
		{Config: got.GetConfig(), UpdateMask: everyField},
		{Config: &jetgatev1.ConsumerConfig{InactiveThreshold: durationpb.New(0)}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"inactive_threshold"}}},
	} {
		up.Stream, up.Consumer = stream, "team-old"
		_, err := bounded.UpdateConsumer(h.ctx(), up)
		wantBound(t, err, "inactive_threshold", "1h")
		if msg := status.Convert(err).Message(); up.GetConfig().GetInactiveThreshold() == nil && !strings.Contains(msg, "as it stands") {
			t.Errorf("refusal %q of an update that did not name inactive_threshold: want it to say the value is the consumer's as it stands", msg)
		}
		if ci := h.info("team-old"); ci.Config.InactiveThreshold != 0 || ci.Config.Description != "" {
			t.Fatalf("a refused update (mask %v) changed the consumer: inactive_threshold %v, description %q", up.GetUpdateMask().GetPaths(), ci.Config.InactiveThreshold, ci.Config.Description)
		}
	}
	// Within the bound in the same update, it is taken.
	if _, err := bounded.UpdateConsumer(h.ctx(), &jetgatev1.UpdateConsumerRequest{Stream: stream, Consumer: "team-old",
		Config:     &jetgatev1.ConsumerConfig{InactiveThreshold: durationpb.New(30 * time.Minute), Description: "bounded"},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"inactive_threshold", "description"}}}); err != nil {
		t.Fatalf("inactive_threshold within the bound: %v", err)
	}
	if ci := h.info("team-old"); ci.Config.InactiveThreshold != 30*time.Minute {
		t.Errorf("inactive_threshold %v; want 30m", ci.Config.InactiveThreshold)
	}
	// Asked for at a create, none is refused; left out, it is the bound.
	_, err = create(h, bounded, &jetgatev1.ConsumerConfig{DurableName: "team-none", InactiveThreshold: durationpb.New(0)})
	wantBound(t, err, "inactive_threshold", "1h")
	r, err = create(h, bounded, &jetgatev1.ConsumerConfig{DurableName: "team-left-out"})
	if err != nil {
		t.Fatal(err)
	}
	if d := r.GetConfig().GetInactiveThreshold().AsDuration(); d != time.Hour {
		t.Errorf("inactive_threshold left out: %v; want the bound, 1h", d)
	}
}
