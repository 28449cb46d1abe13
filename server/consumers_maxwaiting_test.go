package server_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
)

// The server fixes max_waiting when it makes a consumer. An update naming
// it was passed on and refused by the server (MANAGE_REFUSED, "max waiting
// can not be updated"); and a consumer made before admin.max_waiting
// (the server's 512) could be updated no more: every update was refused
// ADMIN_BOUND for a value no update could change. An update naming it is
// refused at once now, saying it is fixed at create (named with the value
// the consumer has, it is taken, as any field fixed at create), and a
// consumer's max_waiting as it stands does not hold up an update of other
// fields.
func TestMaxWaitingIsFixedAtCreate(t *testing.T) {
	h := newHarness(t)
	free := h.adminGateways(1, coreconsumer.Admin{})[0]
	if _, err := create(h, free, &jetgatev1.ConsumerConfig{DurableName: "team-old"}); err != nil {
		t.Fatal(err)
	}
	was := h.info("team-old").Config.MaxWaiting
	bounded := h.adminGateways(1, coreconsumer.Admin{MaxWaiting: 64})[0]
	_, err := bounded.UpdateConsumer(h.ctx(), &jetgatev1.UpdateConsumerRequest{Stream: stream, Consumer: "team-old",
		Config: &jetgatev1.ConsumerConfig{MaxWaiting: 32}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"max_waiting"}}})
	wantCode(t, err, codes.InvalidArgument, "INVALID_ARGUMENT")
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "max_waiting") || !strings.Contains(msg, "created") {
		t.Errorf("refusal %q: want it to say max_waiting is fixed when the consumer is created", msg)
	}
	// Named as the consumer has it (a read-modify-write), it is taken.
	if _, err := bounded.UpdateConsumer(h.ctx(), &jetgatev1.UpdateConsumerRequest{Stream: stream, Consumer: "team-old",
		Config: &jetgatev1.ConsumerConfig{Description: "as read", MaxWaiting: int64(was)}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"description", "max_waiting"}}}); err != nil {
		t.Fatalf("max_waiting named as the consumer has it: %v", err)
	}
	if _, err := bounded.UpdateConsumer(h.ctx(), &jetgatev1.UpdateConsumerRequest{Stream: stream, Consumer: "team-old",
		Config: &jetgatev1.ConsumerConfig{Description: "still mine"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"description"}}}); err != nil {
		t.Fatalf("an update of the description of a consumer with max_waiting %d, above a bound no update can meet: %v", was, err)
	}
	if ci := h.info("team-old"); ci.Config.Description != "still mine" || ci.Config.MaxWaiting != was {
		t.Errorf("description %q, max_waiting %d; want the new description, max_waiting %d as it was", ci.Config.Description, ci.Config.MaxWaiting, was)
	}
	// At a create, the bound holds.
	_, err = create(h, bounded, &jetgatev1.ConsumerConfig{DurableName: "team-new", MaxWaiting: 65})
	wantBound(t, err, "max_waiting", "64")
}
