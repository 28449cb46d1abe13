package server_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
)

// A consumer made through the API is one jetgate serves. With
// max_request_expires 1ms it was made, and every Fetch of it failed
// PULL_REFUSED "see the gateway log" (a log its caller cannot read): the
// server refuses each of jetgate's pulls, which wait 20ms at the least.
// Refused at the create, and at an update, saying why.
func TestAConsumerWhosePullsJetgateCannotMakeIsRefused(t *testing.T) {
	h := newHarness(t)
	a := h.adminGateways(1, coreconsumer.Admin{MaxAckWait: time.Minute})[0]
	_, err := create(h, a, &jetgatev1.ConsumerConfig{DurableName: "team-short", MaxRequestExpires: durationpb.New(time.Millisecond)})
	if c, _ := codeAndReason(err); c != codes.InvalidArgument {
		resp, ferr := a.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: "team-short", Expires: durationpb.New(0)})
		t.Fatalf("create with max_request_expires 1ms: %v; want INVALID_ARGUMENT (a Fetch of it: %v %v)", err, resp, ferr)
	}
	if _, err := create(h, a, &jetgatev1.ConsumerConfig{DurableName: "team-ok", MaxRequestExpires: durationpb.New(time.Second)}); err != nil {
		t.Fatalf("create with max_request_expires 1s: %v", err)
	}
	h.publish(1)
	if resp, err := a.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: "team-ok", Expires: durationpb.New(2 * time.Second)}); err != nil || len(resp.GetMessages()) != 1 {
		t.Fatalf("Fetch of a consumer with max_request_expires 1s: %v %v", resp, err)
	}
	_, err = a.UpdateConsumer(h.ctx(), &jetgatev1.UpdateConsumerRequest{Stream: stream, Consumer: "team-ok",
		Config: &jetgatev1.ConsumerConfig{DurableName: "team-ok", MaxRequestExpires: durationpb.New(time.Millisecond)}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"max_request_expires"}}})
	if c, _ := codeAndReason(err); c != codes.InvalidArgument {
		t.Errorf("update to max_request_expires 1ms: %v; want INVALID_ARGUMENT", err)
	}
}
