package server_test

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
)

// DESIGN 17 names max_request_max_bytes among the server's limits jetgate
// follows, and a pull it refuses MESSAGE_TOO_LARGE names it; GetConsumer
// did not show it, so a caller could not see the limit that refused it.
// A consumer given it by nats.go shows it; one made through the API
// takes it, an update changes it, and a negative one is refused.
func TestGetConsumerShowsMaxRequestMaxBytes(t *testing.T) {
	h := newHarness(t)
	// An operator sets it on the file's consumer with nats.go, as `nats
	// consumer edit` would.
	cfg := h.info(consumer).Config
	cfg.MaxRequestMaxBytes = 4096
	if _, err := h.js.UpdateConsumer(h.ctx(), stream, cfg); err != nil {
		t.Fatal(err)
	}
	got, err := h.cons.GetConsumer(h.ctx(), &jetgatev1.GetConsumerRequest{Stream: stream, Consumer: consumer})
	if err != nil {
		t.Fatal(err)
	}
	if n := got.GetConfig().GetMaxRequestMaxBytes(); n != 4096 {
		t.Errorf("GetConsumer of a consumer given max_request_max_bytes 4096 by nats.go: shows %d", n)
	}

	a := h.adminGateways(1, coreconsumer.Admin{})[0]
	r, err := create(h, a, &jetgatev1.ConsumerConfig{DurableName: "team-mb", MaxRequestMaxBytes: 2048})
	if err != nil {
		t.Fatalf("create with max_request_max_bytes 2048: %v", err)
	}
	if n := r.GetConfig().GetMaxRequestMaxBytes(); n != 2048 {
		t.Errorf("created with max_request_max_bytes 2048: the answer shows %d", n)
	}
	if n := h.info("team-mb").Config.MaxRequestMaxBytes; n != 2048 {
		t.Errorf("created with max_request_max_bytes 2048: the server has %d", n)
	}
	got, err = a.GetConsumer(h.ctx(), &jetgatev1.GetConsumerRequest{Stream: stream, Consumer: "team-mb"})
	if err != nil {
		t.Fatal(err)
	}
	if n := got.GetConfig().GetMaxRequestMaxBytes(); n != 2048 {
		t.Errorf("GetConsumer after a create with max_request_max_bytes 2048: shows %d", n)
	}

	mask := &fieldmaskpb.FieldMask{Paths: []string{"max_request_max_bytes"}}
	u, err := a.UpdateConsumer(h.ctx(), &jetgatev1.UpdateConsumerRequest{Stream: stream, Consumer: "team-mb",
		Config: &jetgatev1.ConsumerConfig{MaxRequestMaxBytes: 8192}, UpdateMask: mask})
	if err != nil {
		t.Fatalf("update of max_request_max_bytes to 8192: %v", err)
	}
	if n := u.GetConfig().GetMaxRequestMaxBytes(); n != 8192 {
		t.Errorf("updated to max_request_max_bytes 8192: the answer shows %d", n)
	}
	if n := h.info("team-mb").Config.MaxRequestMaxBytes; n != 8192 {
		t.Errorf("updated to max_request_max_bytes 8192: the server has %d", n)
	}

	// Read and sent back whole, this field in the mask too, it is unchanged.
	got, err = a.GetConsumer(h.ctx(), &jetgatev1.GetConsumerRequest{Stream: stream, Consumer: "team-mb"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.UpdateConsumer(h.ctx(), &jetgatev1.UpdateConsumerRequest{Stream: stream, Consumer: "team-mb", Config: got.GetConfig(),
		UpdateMask: &fieldmaskpb.FieldMask{Paths: append(slices.Clone(everyField.GetPaths()), "max_request_max_bytes")}}); err != nil {
		t.Fatalf("the config sent back as read: %v", err)
	}
	if n := h.info("team-mb").Config.MaxRequestMaxBytes; n != 8192 {
		t.Errorf("the config sent back as read changed max_request_max_bytes to %d", n)
	}

	_, err = create(h, a, &jetgatev1.ConsumerConfig{DurableName: "team-neg", MaxRequestMaxBytes: -1})
	wantNegativeRefused(t, err, "create")
	if _, err := h.js.Consumer(h.ctx(), stream, "team-neg"); err == nil {
		t.Error("a refused create made the consumer")
	}
	_, err = a.UpdateConsumer(h.ctx(), &jetgatev1.UpdateConsumerRequest{Stream: stream, Consumer: "team-mb",
		Config: &jetgatev1.ConsumerConfig{MaxRequestMaxBytes: -1}, UpdateMask: mask})
	wantNegativeRefused(t, err, "update")
	if n := h.info("team-mb").Config.MaxRequestMaxBytes; n != 8192 {
		t.Errorf("a refused update changed max_request_max_bytes to %d", n)
	}
}

// wantNegativeRefused wants err INVALID_ARGUMENT naming max_request_max_bytes.
func wantNegativeRefused(t *testing.T, err error, what string) {
	t.Helper()
	if c, r := codeAndReason(err); c != codes.InvalidArgument || r != "INVALID_ARGUMENT" {
		t.Errorf("%s with max_request_max_bytes -1: %v; want InvalidArgument INVALID_ARGUMENT", what, err)
		return
	}
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "max_request_max_bytes") {
		t.Errorf("%s with max_request_max_bytes -1: %q; want it to name max_request_max_bytes", what, msg)
	}
}
