package server_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
)

// adminGateways starts n replicas that let callers make consumers named
// team-* on the harness's stream, besides its configured ones.
func (h *harness) adminGateways(n int, a coreconsumer.Admin) []jetgatev1.ConsumerServiceClient {
	h.t.Helper()
	a.Streams, a.Consumers = []string{stream}, []string{"team-*"}
	var out []jetgatev1.ConsumerServiceClient
	for range n {
		g := gwtest.Start(h.t, replica.Options{
			Conn: natstest.Connect(h.t, h.ns),
			Keys: h.cfg.keys,
			Consumers: []coreconsumer.Config{
				{Stream: stream, Name: consumer, AckWait: h.cfg.ackWait, MaxAckPending: h.cfg.maxAckPending},
			},
			Admin: &a,
		})
		out = append(out, g.Consumers)
	}
	return out
}

func create(h *harness, c jetgatev1.ConsumerServiceClient, cfg *jetgatev1.ConsumerConfig) (*jetgatev1.CreateConsumerResponse, error) {
	return c.CreateConsumer(h.ctx(), &jetgatev1.CreateConsumerRequest{Stream: stream, Config: cfg})
}

// A consumer created through the API is served by every replica at once,
// carries its creator, follows an update of its ack_wait, and, deleted,
// is served no more.
func TestConsumerCreatedThroughTheAPIServedUpdatedAndDeleted(t *testing.T) {
	h := newHarness(t)
	gws := h.adminGateways(2, coreconsumer.Admin{MaxAckWait: time.Minute, MaxAckPending: 100})
	a, b := gws[0], gws[1]
	resp, err := create(h, a, &jetgatev1.ConsumerConfig{DurableName: "team-a", AckWait: durationpb.New(20 * time.Second), Description: "replays"})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	cfg := resp.GetConfig()
	if cfg.GetAckPolicy() != jetgatev1.AckPolicy_ACK_POLICY_EXPLICIT || cfg.GetAckWait().AsDuration() != 20*time.Second ||
		cfg.GetMaxAckPending() != 100 || cfg.GetMetadata()[coreconsumer.CreatedBy] != "anonymous" || cfg.GetInactiveThreshold() != nil {
		t.Errorf("created config: %v", cfg)
	}
	// Listed by every replica, with its creator, before anyone called it.
	for i, c := range gws {
		l, err := c.ListConsumers(h.ctx(), &jetgatev1.ListConsumersRequest{Stream: stream})
		if err != nil {
			t.Fatalf("list on replica %d: %v", i, err)
		}
		found := false
		for _, s := range l.GetConsumers() {
			if s.GetName() == "team-a" {
				found = s.GetCreatedBy() == "anonymous"
			}
		}
		if !found {
			t.Errorf("replica %d lists %v; want team-a, created by anonymous", i, l.GetConsumers())
		}
	}
	h.publish(1)
	// The other replica serves it on its first call.
	got := h.fetch(b, "team-a", 1, 2*time.Second)
	if len(got.GetMessages()) != 1 {
		t.Fatalf("fetch from the new consumer through the other replica: %d messages (empty reason %v)", len(got.GetMessages()), got.GetEmptyReason())
	}
	before := got.GetMessages()[0].GetLeaseDeadline().AsTime()
	if d := time.Until(before); d > 20*time.Second || d < 15*time.Second {
		t.Errorf("lease deadline %v away; want about ack_wait 20s", d)
	}
	wantNoFailures(t, ackOn(t, h, b, "team-a", got.GetMessages()[0].GetToken()))

	up, err := b.UpdateConsumer(h.ctx(), &jetgatev1.UpdateConsumerRequest{Stream: stream, Consumer: "team-a",
		Config: &jetgatev1.ConsumerConfig{AckWait: durationpb.New(5 * time.Second), Description: "ignored: not in the mask"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"ack_wait"}}})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if up.GetConfig().GetAckWait().AsDuration() != 5*time.Second || up.GetConfig().GetDescription() != "replays" || up.GetConfig().GetMetadata()[coreconsumer.CreatedBy] != "anonymous" {
		t.Errorf("updated config: %v", up.GetConfig())
	}
	h.publish(1)
	// New leases follow the new ack_wait, on both replicas.
	for _, c := range gws {
		var m *jetgatev1.Message
		deadline := time.Now().Add(5 * time.Second)
		for m == nil || time.Until(m.GetLeaseDeadline().AsTime()) > 5*time.Second {
			if time.Now().After(deadline) {
				t.Fatalf("leases still dated by the old ack_wait: %v away", time.Until(m.GetLeaseDeadline().AsTime()))
			}
			if m != nil {
				wantNoFailures(t, nakNow(t, h, c, m.GetToken()))
			}
			r := h.fetch(c, "team-a", 1, 2*time.Second)
			if len(r.GetMessages()) != 1 {
				t.Fatalf("fetch after the update: %d messages", len(r.GetMessages()))
			}
			m = r.GetMessages()[0]
		}
		wantNoFailures(t, nakNow(t, h, c, m.GetToken()))
	}

	if _, err := a.DeleteConsumer(h.ctx(), &jetgatev1.DeleteConsumerRequest{Stream: stream, Consumer: "team-a"}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := h.js.Consumer(h.ctx(), stream, "team-a"); err == nil {
		t.Error("the consumer is still on the server after Delete")
	}
	for _, c := range gws {
		deadline := time.Now().Add(5 * time.Second)
		for {
			_, err := c.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: "team-a", Batch: 1, Expires: durationpb.New(100 * time.Millisecond)})
			if codeOf(err) == codes.NotFound {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("fetch after delete: %v; want NOT_FOUND", err)
			}
		}
	}
}

func ackOn(t *testing.T, h *harness, c jetgatev1.ConsumerServiceClient, name, tok string) []*jetgatev1.TokenFailure {
	t.Helper()
	r, err := c.Ack(h.ctx(), &jetgatev1.AckRequest{Stream: stream, Consumer: name, Tokens: []string{tok}})
	if err != nil {
		t.Fatalf("ack: %v", err)
	}
	return r.GetFailures()
}

func nakNow(t *testing.T, h *harness, c jetgatev1.ConsumerServiceClient, tok string) []*jetgatev1.TokenFailure {
	t.Helper()
	r, err := c.Nak(h.ctx(), &jetgatev1.NakRequest{Stream: stream, Consumer: "team-a", Tokens: []string{tok}})
	if err != nil {
		t.Fatalf("nak: %v", err)
	}
	return r.GetFailures()
}

// Each rule of the admin block and of what jetgate serves refuses with its
// own reason, and creates or changes nothing.
func TestConsumersThroughTheAPIRefusals(t *testing.T) {
	h := newHarness(t)
	a := h.adminGateways(1, coreconsumer.Admin{MaxAckWait: time.Minute, MaxDeliver: 5, MaxAckPending: 100, MaxPerPrincipal: 2, InactiveThreshold: time.Hour})[0]
	cases := []struct {
		name   string
		cfg    *jetgatev1.ConsumerConfig
		code   codes.Code
		reason string
	}{
		{"no name", &jetgatev1.ConsumerConfig{}, codes.InvalidArgument, "INVALID_ARGUMENT"},
		{"outside the name patterns", &jetgatev1.ConsumerConfig{DurableName: "ops-x"}, codes.InvalidArgument, "ADMIN_BOUND"},
		{"ack policy none", &jetgatev1.ConsumerConfig{DurableName: "team-x", AckPolicy: jetgatev1.AckPolicy_ACK_POLICY_NONE}, codes.InvalidArgument, "INVALID_ARGUMENT"},
		{"ack policy all", &jetgatev1.ConsumerConfig{DurableName: "team-x", AckPolicy: jetgatev1.AckPolicy_ACK_POLICY_ALL}, codes.InvalidArgument, "INVALID_ARGUMENT"},
		{"ack_wait above the bound", &jetgatev1.ConsumerConfig{DurableName: "team-x", AckWait: durationpb.New(2 * time.Minute)}, codes.InvalidArgument, "ADMIN_BOUND"},
		{"max_deliver above the bound", &jetgatev1.ConsumerConfig{DurableName: "team-x", MaxDeliver: 6}, codes.InvalidArgument, "ADMIN_BOUND"},
		{"max_ack_pending above the bound", &jetgatev1.ConsumerConfig{DurableName: "team-x", MaxAckPending: 101}, codes.InvalidArgument, "ADMIN_BOUND"},
		// It was cut to the bound, unsaid, where every other bound refuses.
		{"inactive_threshold above the bound", &jetgatev1.ConsumerConfig{DurableName: "team-x", InactiveThreshold: durationpb.New(48 * time.Hour)}, codes.InvalidArgument, "ADMIN_BOUND"},
		{"a jetgate metadata key", &jetgatev1.ConsumerConfig{DurableName: "team-x", Metadata: map[string]string{"jetgate.created_by": "someone"}}, codes.InvalidArgument, "INVALID_ARGUMENT"},
		// Under a second, the server rescans the pending messages without rest.
		{"ack_wait under a second", &jetgatev1.ConsumerConfig{DurableName: "team-x", AckWait: durationpb.New(time.Millisecond)}, codes.InvalidArgument, "INVALID_ARGUMENT"},
		// Said, 0s is not "left out" (a reviewer saw it made with 30s).
		{"ack_wait 0s", &jetgatev1.ConsumerConfig{DurableName: "team-x", AckWait: durationpb.New(0)}, codes.InvalidArgument, "INVALID_ARGUMENT"},
		{"a backoff step under a second", &jetgatev1.ConsumerConfig{DurableName: "team-x", Backoff: []*durationpb.Duration{durationpb.New(2 * time.Second), durationpb.New(1)}}, codes.InvalidArgument, "INVALID_ARGUMENT"},
		{"more backoff steps than max_deliver", &jetgatev1.ConsumerConfig{DurableName: "team-x", MaxDeliver: 2, Backoff: []*durationpb.Duration{durationpb.New(time.Second), durationpb.New(2 * time.Second), durationpb.New(3 * time.Second)}}, codes.InvalidArgument, "INVALID_ARGUMENT"},
		{"more backoff steps than the block's max_deliver", &jetgatev1.ConsumerConfig{DurableName: "team-x", Backoff: []*durationpb.Duration{durationpb.New(time.Second), durationpb.New(time.Second), durationpb.New(time.Second), durationpb.New(time.Second), durationpb.New(time.Second), durationpb.New(time.Second)}}, codes.InvalidArgument, "ADMIN_BOUND"},
		{"a filter subject with an empty token", &jetgatev1.ConsumerConfig{DurableName: "team-x", FilterSubjects: []string{"orders..x"}}, codes.InvalidArgument, "INVALID_ARGUMENT"},
		{"a filter subject with a wildcard in a token", &jetgatev1.ConsumerConfig{DurableName: "team-x", FilterSubjects: []string{"orders.>x"}}, codes.InvalidArgument, "INVALID_ARGUMENT"},
		{"a filter subject with a space", &jetgatev1.ConsumerConfig{DurableName: "team-x", FilterSubjects: []string{"orders.a", "orders. x"}}, codes.InvalidArgument, "INVALID_ARGUMENT"},
		{"the file's consumer", &jetgatev1.ConsumerConfig{DurableName: consumer}, codes.FailedPrecondition, "CONSUMER_CONFIGURED"},
	}
	for _, tc := range cases {
		_, err := create(h, a, tc.cfg)
		if c, r := codeAndReason(err); c != tc.code || r != tc.reason {
			t.Errorf("%s: %v; want %v %s", tc.name, err, tc.code, tc.reason)
		}
	}
	if _, err := h.js.Consumer(h.ctx(), stream, "team-x"); err == nil {
		t.Error("a refused create made the consumer")
	}
	// The quota: two, then RESOURCE_EXHAUSTED. team-2 has as many backoff
	// steps as deliveries, which the server takes.
	for _, name := range []string{"team-1", "team-2"} {
		cfg := &jetgatev1.ConsumerConfig{DurableName: name}
		if name == "team-2" {
			cfg.MaxDeliver, cfg.Backoff = 2, []*durationpb.Duration{durationpb.New(time.Second), durationpb.New(2 * time.Second)}
		}
		r, err := create(h, a, cfg)
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		if got := r.GetConfig().GetMaxDeliver(); name == "team-1" && got != 5 {
			t.Errorf("max_deliver unset: %d; want the bound, 5", got)
		}
	}
	// The same request again, by the same creator: the name is taken,
	// whatever the quota (the server would take it as done).
	_, err := create(h, a, &jetgatev1.ConsumerConfig{DurableName: "team-1"})
	wantCode(t, err, codes.AlreadyExists, "CONSUMER_EXISTS")
	_, err = create(h, a, &jetgatev1.ConsumerConfig{DurableName: "team-3"})
	wantCode(t, err, codes.ResourceExhausted, "CONSUMER_QUOTA_EXCEEDED")
	// The file's consumer is not the API's to change, whatever its name.
	_, err = a.DeleteConsumer(h.ctx(), &jetgatev1.DeleteConsumerRequest{Stream: stream, Consumer: consumer})
	wantCode(t, err, codes.FailedPrecondition, "CONSUMER_CONFIGURED")
	// Update and delete: never the file's consumer, nor one made by others'
	// tools, and only fields an update may change.
	if _, err := h.js.CreateOrUpdateConsumer(h.ctx(), stream, jetstreamPull("team-cli")); err != nil {
		t.Fatal(err)
	}
	mask := func(p ...string) *fieldmaskpb.FieldMask { return &fieldmaskpb.FieldMask{Paths: p} }
	upd := func(name string, m *fieldmaskpb.FieldMask) error {
		_, err := a.UpdateConsumer(h.ctx(), &jetgatev1.UpdateConsumerRequest{Stream: stream, Consumer: name, Config: &jetgatev1.ConsumerConfig{AckWait: durationpb.New(2 * time.Minute)}, UpdateMask: m})
		return err
	}
	wantCode(t, upd("team-1", nil), codes.InvalidArgument, "INVALID_ARGUMENT")
	wantCode(t, upd("team-1", mask("durable_name")), codes.InvalidArgument, "INVALID_ARGUMENT")
	wantCode(t, upd("team-1", mask("ack_wait")), codes.InvalidArgument, "ADMIN_BOUND")
	for _, bad := range []*jetgatev1.ConsumerConfig{{AckWait: durationpb.New(500 * time.Millisecond)}, {FilterSubjects: []string{"orders. x"}}} {
		_, err := a.UpdateConsumer(h.ctx(), &jetgatev1.UpdateConsumerRequest{Stream: stream, Consumer: "team-1", Config: bad,
			UpdateMask: mask("ack_wait", "filter_subjects")})
		wantCode(t, err, codes.InvalidArgument, "INVALID_ARGUMENT")
	}
	// A body naming another consumer than the path is refused, not applied
	// to the path's (a reviewer's finding): a consumer cannot be renamed.
	_, err = a.UpdateConsumer(h.ctx(), &jetgatev1.UpdateConsumerRequest{Stream: stream, Consumer: "team-1",
		Config: &jetgatev1.ConsumerConfig{DurableName: "team-2", Description: "renamed?"}, UpdateMask: mask("description")})
	wantCode(t, err, codes.InvalidArgument, "INVALID_ARGUMENT")
	if d := h.info("team-1").Config.Description; d != "" {
		t.Errorf("an update naming team-2 in its body changed team-1: description %q", d)
	}
	wantCode(t, upd("team-cli", mask("description")), codes.FailedPrecondition, "CONSUMER_NOT_CREATED_BY_API")
	_, err = a.DeleteConsumer(h.ctx(), &jetgatev1.DeleteConsumerRequest{Stream: stream, Consumer: "team-cli"})
	wantCode(t, err, codes.FailedPrecondition, "CONSUMER_NOT_CREATED_BY_API")
	_, err = a.DeleteConsumer(h.ctx(), &jetgatev1.DeleteConsumerRequest{Stream: stream, Consumer: "team-nobody"})
	wantCode(t, err, codes.NotFound, "CONSUMER_NOT_FOUND")
	// A consumer operators made under the admin patterns is not served on
	// demand: only those created through the API are.
	_, err = a.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: "team-cli", Batch: 1, Expires: durationpb.New(100 * time.Millisecond)})
	wantCode(t, err, codes.NotFound, "CONSUMER_NOT_FOUND")
	if ci := h.info("team-cli"); ci.Config.AckWait != 30*time.Second {
		t.Errorf("refused update changed team-cli: ack_wait %v", ci.Config.AckWait)
	}
}

// What the admin block fills in where a create leaves it unset keeps within
// the stream's own limits for its consumers, which the server holds every
// consumer to: the create is not refused for a value its caller never gave.
func TestAdminDefaultsKeepWithinTheStreamsConsumerLimits(t *testing.T) {
	h := newHarness(t)
	si, err := h.js.Stream(h.ctx(), stream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := si.CachedInfo().Config
	cfg.ConsumerLimits = jetstream.StreamConsumerLimits{MaxAckPending: 2000, InactiveThreshold: time.Hour}
	if _, err := h.js.UpdateStream(h.ctx(), cfg); err != nil {
		t.Fatal(err)
	}
	a := h.adminGateways(1, coreconsumer.Admin{MaxAckPending: 5000, InactiveThreshold: 24 * time.Hour})[0]
	r, err := create(h, a, &jetgatev1.ConsumerConfig{DurableName: "team-limited"})
	if err != nil {
		t.Fatalf("a create that sets neither max_ack_pending nor inactive_threshold: %v", err)
	}
	if got, gotIdle := r.GetConfig().GetMaxAckPending(), r.GetConfig().GetInactiveThreshold().AsDuration(); got != 2000 || gotIdle != time.Hour {
		t.Errorf("max_ack_pending %d, inactive_threshold %v; want the stream's limits, 2000 and 1h", got, gotIdle)
	}
	_, err = create(h, a, &jetgatev1.ConsumerConfig{DurableName: "team-above", MaxAckPending: 3000})
	wantCode(t, err, codes.FailedPrecondition, "MANAGE_REFUSED") // asked for: the server's refusal, in its words
}

// The account's max_ack_pending bounds the admin block's default too, its
// tier's where the account's limits are tiered by replicas: the server
// refuses a consumer above it.
func TestAdminDefaultsKeepWithinTheAccountsLimit(t *testing.T) {
	for _, tier := range []string{"", "R1"} {
		limits := map[string]natsserver.JetStreamAccountLimits{
			tier: {MaxMemory: -1, MaxStore: -1, MaxStreams: -1, MaxConsumers: -1, MaxAckPending: 300},
		}
		h := newHarness(t, maxAckPending(100), onServer(func(ns *natsserver.Server) {
			if err := ns.GlobalAccount().UpdateJetStreamLimits(limits); err != nil {
				t.Fatal(err)
			}
		}))
		a := h.adminGateways(1, coreconsumer.Admin{MaxAckPending: 5000})[0]
		r, err := create(h, a, &jetgatev1.ConsumerConfig{DurableName: "team-a"})
		if err != nil {
			t.Fatalf("tier %q: a create that leaves max_ack_pending unset: %v", tier, err)
		}
		if got := r.GetConfig().GetMaxAckPending(); got != 300 {
			t.Errorf("tier %q: max_ack_pending %d; want the account's limit, 300", tier, got)
		}
	}
}

// Without an admin block, the RPCs are off.
func TestConsumersThroughTheAPIOffWithoutAnAdminBlock(t *testing.T) {
	h := newHarness(t)
	_, err := create(h, h.cons, &jetgatev1.ConsumerConfig{DurableName: "team-a"})
	wantCode(t, err, codes.FailedPrecondition, "ADMIN_DISABLED")
	_, err = h.cons.DeleteConsumer(h.ctx(), &jetgatev1.DeleteConsumerRequest{Stream: stream, Consumer: consumer})
	wantCode(t, err, codes.FailedPrecondition, "ADMIN_DISABLED")
}

// jetstreamPull is a pull consumer with explicit acks, as an operator
// makes one with the NATS CLI.
func jetstreamPull(name string) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy}
}

// Delete answers the callers waiting on the consumer, on the replica that
// deleted it and on another: their Fetch ends NOT_FOUND, not empty at its
// expiry; and a token of the deleted consumer settles nothing.
func TestDeleteAnswersTheCallersWaiting(t *testing.T) {
	h := newHarness(t)
	gws := h.adminGateways(2, coreconsumer.Admin{})
	if _, err := create(h, gws[0], &jetgatev1.ConsumerConfig{DurableName: "team-a"}); err != nil {
		t.Fatalf("create: %v", err)
	}
	h.publish(1)
	held := h.fetch(gws[1], "team-a", 1, 2*time.Second).GetMessages()
	if len(held) != 1 {
		t.Fatalf("fetch: %d messages", len(held))
	}
	errs := make(chan error, len(gws))
	for _, c := range gws {
		go func() {
			_, err := c.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: "team-a", Batch: 1, Expires: durationpb.New(15 * time.Second)})
			errs <- err
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for h.info("team-a").NumWaiting < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the two Fetches are not waiting on the server: %d", h.info("team-a").NumWaiting)
		}
	}
	if _, err := gws[0].DeleteConsumer(h.ctx(), &jetgatev1.DeleteConsumerRequest{Stream: stream, Consumer: "team-a"}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	for range gws {
		wantCode(t, <-errs, codes.NotFound, "CONSUMER_NOT_FOUND")
	}
	_, err := gws[1].Ack(h.ctx(), &jetgatev1.AckRequest{Stream: stream, Consumer: "team-a", Tokens: []string{held[0].GetToken()}})
	wantCode(t, err, codes.NotFound, "CONSUMER_NOT_FOUND")
}

// A stream of the admin block is served for Publish too, whether or not the
// file names a consumer of it; another stream is not.
func TestAnAdminStreamIsPublishedTo(t *testing.T) {
	h := newHarness(t)
	natsSelfService := "SELF"
	natstest.Stream(t, h.nc, natsSelfService, "self.>")
	natstest.Stream(t, h.nc, "OTHER", "other.>")
	g := gwtest.Start(t, replica.Options{
		Conn:  natstest.Connect(t, h.ns),
		Keys:  h.cfg.keys,
		Admin: &coreconsumer.Admin{Streams: []string{natsSelfService}, Consumers: []string{"*"}},
	})
	if _, err := g.Streams.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: natsSelfService, Subject: "self.a", Data: []byte("x")}); err != nil {
		t.Errorf("publish to the admin block's stream: %v", err)
	}
	_, err := g.Streams.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: natsSelfService, Subject: "other.a", Data: []byte("x")})
	wantCode(t, err, codes.InvalidArgument, "SUBJECT_NOT_ALLOWED")
	_, err = g.Streams.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: "OTHER", Subject: "other.a", Data: []byte("x")})
	wantCode(t, err, codes.NotFound, "STREAM_NOT_FOUND")
}

// A stream the admin block opens is listed by every replica of a gateway
// of the admin block alone, with no consumer before one is created on it
// through the API, and with it once one is, before any replica has bound
// it; a consumer outside the block's names is not counted, whatever its
// metadata says.
func TestAStreamWithAConsumerCreatedThroughTheAPIIsListed(t *testing.T) {
	h := newHarness(t)
	a := coreconsumer.Admin{Streams: []string{stream}, Consumers: []string{"team-*"}}
	var gws []*gwtest.Replica
	for range 2 {
		gws = append(gws, gwtest.Start(t, replica.Options{Conn: natstest.Connect(t, h.ns), Keys: h.cfg.keys, Admin: &a}))
	}
	for i, g := range gws {
		ss, err := g.Streams.ListStreams(h.ctx(), &jetgatev1.ListStreamsRequest{})
		if err != nil || len(ss.GetStreams()) != 1 || ss.GetStreams()[0].GetName() != stream || ss.GetStreams()[0].GetConsumers() != 0 {
			t.Fatalf("replica %d lists %v %v before any consumer was created; want %s with none", i, ss, err, stream)
		}
	}
	if _, err := gws[0].Consumers.CreateConsumer(h.ctx(), &jetgatev1.CreateConsumerRequest{Stream: stream, Config: &jetgatev1.ConsumerConfig{DurableName: "team-a"}}); err != nil {
		t.Fatalf("create: %v", err)
	}
	other := jetstreamPull("ops-a")
	other.Metadata = map[string]string{coreconsumer.CreatedBy: "someone"}
	if _, err := h.js.CreateOrUpdateConsumer(h.ctx(), stream, other); err != nil {
		t.Fatal(err)
	}
	for i, g := range gws {
		ss, err := g.Streams.ListStreams(h.ctx(), &jetgatev1.ListStreamsRequest{})
		if err != nil || len(ss.GetStreams()) != 1 || ss.GetStreams()[0].GetName() != stream || ss.GetStreams()[0].GetConsumers() != 1 {
			t.Errorf("replica %d lists %v %v; want %s with the one consumer created through the API", i, ss, err, stream)
		}
	}
}

// raceCreates sends n creates at once, the i-th of consumer name(i)
// through gws[i%len(gws)], and returns how many made their consumer; each
// other must be refused with code and reason.
func raceCreates(t *testing.T, h *harness, gws []jetgatev1.ConsumerServiceClient, n int, name func(i int) string, code codes.Code, reason string) int {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			_, errs[i] = create(h, gws[i%len(gws)], &jetgatev1.ConsumerConfig{DurableName: name(i)})
		})
	}
	close(start)
	wg.Wait()
	created := 0
	for i, err := range errs {
		switch c, r := codeAndReason(err); {
		case err == nil:
			created++
		case c != code || r != reason:
			t.Errorf("create %d: %v; want it made or %s", i, err, reason)
		}
	}
	return created
}

// Creates that race past the quota check each count the others once made:
// all but the earliest back out, deleting theirs, so the quota holds. Two
// replicas take them, as a deployment's would.
func TestConcurrentCreatesKeepTheQuota(t *testing.T) {
	h := newHarness(t)
	gws := h.adminGateways(2, coreconsumer.Admin{MaxPerPrincipal: 2})
	if _, err := create(h, gws[0], &jetgatev1.ConsumerConfig{DurableName: "team-0"}); err != nil {
		t.Fatal(err)
	}
	const n = 6
	created := raceCreates(t, h, gws, n, func(i int) string { return fmt.Sprintf("team-race-%d", i) },
		codes.ResourceExhausted, "CONSUMER_QUOTA_EXCEEDED")
	if created != 1 {
		t.Errorf("%d of %d racing creates made their consumer; want 1, the quota's last place", created, n)
	}
	left := 0
	st, err := h.js.Stream(h.ctx(), stream)
	if err != nil {
		t.Fatal(err)
	}
	for name := range st.ConsumerNames(h.ctx()).Name() {
		if strings.HasPrefix(name, "team-") {
			left++
		}
	}
	if left != 2 {
		t.Errorf("%d consumers of the creator left; want 2, the quota", left)
	}
}

// Identical creates of one name that race past the check for a consumer of
// that name each reach the server, which takes a create of a consumer that
// exists with the same configuration as done: one is made, and every other
// is told CONSUMER_EXISTS, as a create of a name taken before is, rather
// than each caller told it made the consumer the others made.
func TestIdenticalCreatesAtOnceMakeOneConsumer(t *testing.T) {
	h := newHarness(t)
	gws := h.adminGateways(2, coreconsumer.Admin{})
	const n = 6
	created := raceCreates(t, h, gws, n, func(int) string { return "team-same" }, codes.AlreadyExists, "CONSUMER_EXISTS")
	if created != 1 {
		t.Errorf("%d of %d identical creates at once were told they made the consumer; want 1", created, n)
	}
}

// A consumer's policy changed from pinned_client through the API is
// unpinned: the server keeps the old pin otherwise, and serves no other
// caller until priority_timeout (a minute here). To another policy with its
// groups, or to none (no group left to unpin by once updated).
func TestAConsumerNoLongerPinnedIsUnpinned(t *testing.T) {
	h := newHarness(t)
	a := h.adminGateways(1, coreconsumer.Admin{})[0]
	for _, to := range []*jetgatev1.ConsumerConfig{
		{PriorityPolicy: jetgatev1.PriorityPolicy_PRIORITY_POLICY_OVERFLOW},
		{PriorityPolicy: jetgatev1.PriorityPolicy_PRIORITY_POLICY_UNSPECIFIED},
	} {
		t.Run(to.GetPriorityPolicy().String(), func(t *testing.T) {
			name := "team-pin-" + strings.ToLower(strings.TrimPrefix(to.GetPriorityPolicy().String(), "PRIORITY_POLICY_"))
			name = strings.ReplaceAll(name, "_", "-")
			subject := "orders." + name
			_, err := create(h, a, &jetgatev1.ConsumerConfig{DurableName: name, FilterSubjects: []string{subject},
				PriorityGroups: []string{"main"}, PriorityPolicy: jetgatev1.PriorityPolicy_PRIORITY_POLICY_PINNED_CLIENT, PriorityTimeout: durationpb.New(time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			fetch := func(group string) *jetgatev1.FetchResponse {
				t.Helper()
				r, err := a.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: name, Batch: 1, Group: group, Expires: durationpb.New(5 * time.Second)})
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			h.publishRaw(subject, nil, "one")
			if r := fetch("main"); len(r.GetMessages()) != 1 || r.GetPinId() == "" {
				t.Fatalf("the first fetch: %d messages, pin %q; want one, pinned", len(r.GetMessages()), r.GetPinId())
			}
			mask := []string{"priority_policy"}
			group := "main"
			if to.GetPriorityPolicy() == jetgatev1.PriorityPolicy_PRIORITY_POLICY_UNSPECIFIED {
				mask, group = append(mask, "priority_groups", "priority_timeout"), ""
			}
			_, err = a.UpdateConsumer(h.ctx(), &jetgatev1.UpdateConsumerRequest{Stream: stream, Consumer: name,
				Config: to, UpdateMask: &fieldmaskpb.FieldMask{Paths: mask}})
			if err != nil {
				t.Fatal(err)
			}
			h.publishRaw(subject, nil, "two")
			if r := fetch(group); len(r.GetMessages()) != 1 {
				t.Fatalf("a fetch once the policy is %v: %d messages (empty: %v); want the message, the old pin let go",
					to.GetPriorityPolicy(), len(r.GetMessages()), r.GetEmptyReason())
			}
		})
	}
}
