package server_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
)

// everyField is an update_mask naming every field of the config, those
// fixed at create too: a read-modify-write of the whole configuration.
var everyField = &fieldmaskpb.FieldMask{Paths: []string{"durable_name", "deliver_policy", "opt_start_seq", "opt_start_time", "ack_policy", "num_replicas", "ack_wait", "max_deliver", "backoff", "filter_subjects",
	"max_waiting", "max_ack_pending", "max_request_batch", "max_request_expires", "max_request_max_bytes", "description", "metadata",
	"priority_groups", "priority_policy", "priority_timeout", "inactive_threshold"}}

// GetConsumer's config sent back whole, every updatable field in the mask,
// changes nothing: not a field, not the metadata.
func TestAConsumerReadAndSentBackIsUnchanged(t *testing.T) {
	h := newHarness(t)
	a := h.adminGateways(1, coreconsumer.Admin{MaxAckWait: time.Minute, MaxDeliver: 5, MaxAckPending: 100, MaxWaiting: 64, InactiveThreshold: time.Hour})[0]
	for _, cfg := range []*jetgatev1.ConsumerConfig{
		{DurableName: "team-plain"},
		{DurableName: "team-full", AckWait: durationpb.New(time.Second), MaxDeliver: 3,
			Backoff:        []*durationpb.Duration{durationpb.New(time.Second), durationpb.New(2 * time.Second)},
			FilterSubjects: []string{"orders.a", "orders.b"}, MaxWaiting: 10, MaxAckPending: 50, MaxRequestBatch: 20, MaxRequestMaxBytes: 1 << 20,
			MaxRequestExpires: durationpb.New(10 * time.Second), Description: "d", Metadata: map[string]string{"owner": "x"},
			PriorityGroups: []string{"g"}, PriorityPolicy: jetgatev1.PriorityPolicy_PRIORITY_POLICY_PINNED_CLIENT,
			PriorityTimeout: durationpb.New(30 * time.Second), InactiveThreshold: durationpb.New(30 * time.Minute)},
		{DurableName: "team-from", DeliverPolicy: jetgatev1.DeliverPolicy_DELIVER_POLICY_BY_START_TIME, OptStartTime: timestamppb.New(time.Now().Add(-time.Hour)), NumReplicas: 1},
		{DurableName: "team-seq", DeliverPolicy: jetgatev1.DeliverPolicy_DELIVER_POLICY_BY_START_SEQUENCE, OptStartSeq: 3},
	} {
		if _, err := create(h, a, cfg); err != nil {
			t.Fatalf("create %s: %v", cfg.GetDurableName(), err)
		}
		before := h.info(cfg.GetDurableName()).Config
		got, err := a.GetConsumer(h.ctx(), &jetgatev1.GetConsumerRequest{Stream: stream, Consumer: cfg.GetDurableName()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.UpdateConsumer(h.ctx(), &jetgatev1.UpdateConsumerRequest{Stream: stream, Consumer: cfg.GetDurableName(),
			Config: got.GetConfig(), UpdateMask: everyField}); err != nil {
			t.Fatalf("%s sent back as read: %v", cfg.GetDurableName(), err)
		}
		if after := h.info(cfg.GetDurableName()).Config; !reflect.DeepEqual(before, after) {
			t.Errorf("%s sent back as read changed:\nbefore %+v\nafter  %+v", cfg.GetDurableName(), before, after)
		}
	}
}

// A consumer made before the admin block bound max_deliver has the
// server's -1, unlimited. Sent back as read, or left out of an update's
// mask, it was taken for "unset" and cut to the bound unsaid; asked for at
// a create, the same. Both are refused now, naming the bound, and nothing
// changes.
func TestUnlimitedMaxDeliverUnderABoundIsRefused(t *testing.T) {
	h := newHarness(t)
	free := h.adminGateways(1, coreconsumer.Admin{})[0]
	if _, err := create(h, free, &jetgatev1.ConsumerConfig{DurableName: "team-old"}); err != nil {
		t.Fatal(err)
	}
	if md := h.info("team-old").Config.MaxDeliver; md != -1 {
		t.Fatalf("max_deliver %d; want the server's -1", md)
	}
	bounded := h.adminGateways(1, coreconsumer.Admin{MaxDeliver: 5})[0]
	got, err := bounded.GetConsumer(h.ctx(), &jetgatev1.GetConsumerRequest{Stream: stream, Consumer: "team-old"})
	if err != nil {
		t.Fatal(err)
	}
	for _, up := range []*jetgatev1.UpdateConsumerRequest{
		{Config: got.GetConfig(), UpdateMask: everyField},
		{Config: &jetgatev1.ConsumerConfig{Description: "only this"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"description"}}},
		{Config: &jetgatev1.ConsumerConfig{MaxDeliver: -1}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"max_deliver"}}},
	} {
		up.Stream, up.Consumer = stream, "team-old"
		_, err := bounded.UpdateConsumer(h.ctx(), up)
		wantBound(t, err, "max_deliver", "5")
		if msg := status.Convert(err).Message(); up.GetConfig().GetMaxDeliver() == 0 && !strings.Contains(msg, "as it stands") {
			t.Errorf("refusal %q of an update that did not name max_deliver: want it to say the value is the consumer's as it stands", msg)
		}
		if ci := h.info("team-old"); ci.Config.MaxDeliver != -1 || ci.Config.Description != "" {
			t.Fatalf("a refused update (mask %v) changed the consumer: max_deliver %d, description %q", up.GetUpdateMask().GetPaths(), ci.Config.MaxDeliver, ci.Config.Description)
		}
	}
	// Within the bound in the same update, it is taken.
	r, err := bounded.UpdateConsumer(h.ctx(), &jetgatev1.UpdateConsumerRequest{Stream: stream, Consumer: "team-old",
		Config: &jetgatev1.ConsumerConfig{MaxDeliver: 4, Description: "bounded"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"max_deliver", "description"}}})
	if err != nil {
		t.Fatalf("max_deliver within the bound: %v", err)
	}
	if r.GetConfig().GetMaxDeliver() != 4 {
		t.Errorf("max_deliver %d; want 4", r.GetConfig().GetMaxDeliver())
	}
	// Left out of a create, it is the bound; asked for, unlimited is refused.
	_, err = create(h, bounded, &jetgatev1.ConsumerConfig{DurableName: "team-new", MaxDeliver: -1})
	wantBound(t, err, "max_deliver", "5")
	if _, err := h.js.Consumer(h.ctx(), stream, "team-new"); err == nil {
		t.Error("a refused create made the consumer")
	}
}

// wantBound wants err ADMIN_BOUND, its message naming field and the bound.
func wantBound(t *testing.T, err error, field, bound string) {
	t.Helper()
	wantCode(t, err, codes.InvalidArgument, "ADMIN_BOUND")
	if msg := status.Convert(err).Message(); !strings.Contains(msg, field) || !strings.Contains(msg, bound) {
		t.Errorf("refusal %q: want it to name %s and the bound, %s", msg, field, bound)
	}
}
