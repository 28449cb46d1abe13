package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

// operated is a consumer an operator made with other tools, and replicas of
// jetgate in front of it that name no field of it.
type operated struct {
	*harness
	name     string
	replicas []jetgatev1.ConsumerServiceClient
}

func newOperated(t *testing.T, cfg jetstream.ConsumerConfig, replicas int) *operated {
	t.Helper()
	h := newHarness(t, withKeys(token.RandomKeyring()))
	cfg.AckPolicy = jetstream.AckExplicitPolicy
	if _, err := h.js.CreateConsumer(h.ctx(), stream, cfg); err != nil {
		t.Fatalf("create consumer: %v", err)
	}
	o := &operated{harness: h, name: cfg.Durable}
	for range replicas {
		g := gwtest.Start(t, replica.Options{
			Conn:      natstest.Connect(t, h.ns),
			Consumers: []coreconsumer.Config{{Stream: stream, Name: cfg.Durable}},
			Keys:      h.cfg.keys,
		})
		o.replicas = append(o.replicas, g.Consumers)
	}
	return o
}

func (o *operated) fetch(t *testing.T, c jetgatev1.ConsumerServiceClient, req *jetgatev1.FetchRequest) (*jetgatev1.FetchResponse, error) {
	t.Helper()
	req.Stream, req.Consumer = stream, o.name
	if req.Expires == nil {
		req.Expires = durationpb.New(300 * time.Millisecond)
	}
	return c.Fetch(o.ctx(), req)
}

func codeAndReason(err error) (codes.Code, string) {
	st := status.Convert(err)
	for _, d := range st.Details() {
		if info, ok := d.(interface{ GetReason() string }); ok {
			return st.Code(), info.GetReason()
		}
	}
	return st.Code(), ""
}

// A consumer with one priority group takes every Fetch that names none
// (before, each failed with PULL_REFUSED), and overflow's min_pending holds
// messages back until the threshold.
func TestOverflowConsumerServesFetchesWithoutAGroup(t *testing.T) {
	o := newOperated(t, jetstream.ConsumerConfig{Durable: "prio", PriorityGroups: []string{"main"},
		PriorityPolicy: jetstream.PriorityPolicyOverflow}, 1)
	o.publish(2)
	natstest.Eventually(t, 5*time.Second, "2 pending", func() bool { return o.info("prio").NumPending == 2 })
	r, err := o.fetch(t, o.replicas[0], &jetgatev1.FetchRequest{MinPending: 5, Batch: 10})
	if err != nil || len(r.GetMessages()) != 0 {
		t.Fatalf("min_pending 5 with 2 pending: %v, %d messages; want none", err, len(r.GetMessages()))
	}
	o.publish(3)
	natstest.Eventually(t, 5*time.Second, "5 pending", func() bool { return o.info("prio").NumPending == 5 })
	r, err = o.fetch(t, o.replicas[0], &jetgatev1.FetchRequest{MinPending: 5, Batch: 10})
	if err != nil || len(r.GetMessages()) == 0 {
		t.Fatalf("min_pending 5 with 5 pending: %v, %d messages; want some", err, len(r.GetMessages()))
	}
	_, err = o.fetch(t, o.replicas[0], &jetgatev1.FetchRequest{Batch: 10})
	if err != nil {
		t.Fatalf("a Fetch that names no group: %v", err)
	}
}

func TestPriorityFieldsAreCheckedAgainstTheConsumer(t *testing.T) {
	o := newOperated(t, jetstream.ConsumerConfig{Durable: "prio", PriorityGroups: []string{"a", "b"},
		PriorityPolicy: jetstream.PriorityPolicyOverflow}, 1)
	tests := []struct {
		name   string
		req    *jetgatev1.FetchRequest
		reason string
	}{
		{"no group of two", &jetgatev1.FetchRequest{}, "PRIORITY_GROUP_REQUIRED"},
		{"an unknown group", &jetgatev1.FetchRequest{Group: "c"}, "INVALID_ARGUMENT"},
		{"a bad group name", &jetgatev1.FetchRequest{Group: "no spaces"}, "INVALID_ARGUMENT"},
		{"a pin on an overflow consumer", &jetgatev1.FetchRequest{Group: "a", PinId: "x"}, "INVALID_ARGUMENT"},
		{"a priority on an overflow consumer", &jetgatev1.FetchRequest{Group: "a", Priority: 3}, "INVALID_ARGUMENT"},
		{"a priority over 9", &jetgatev1.FetchRequest{Group: "a", Priority: 10}, "INVALID_ARGUMENT"},
		{"a negative min_pending", &jetgatev1.FetchRequest{Group: "a", MinPending: -1}, "INVALID_ARGUMENT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := o.fetch(t, o.replicas[0], tt.req)
			if code, reason := codeAndReason(err); code != codes.InvalidArgument || reason != tt.reason {
				t.Fatalf("%v; want INVALID_ARGUMENT %s", err, tt.reason)
			}
		})
	}
	// A consumer without groups refuses priority fields.
	_, err := o.harness.cons.Fetch(o.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Group: "a", Expires: durationpb.New(0)})
	if code, _ := codeAndReason(err); code != codes.InvalidArgument {
		t.Fatalf("a group on a consumer without groups: %v; want INVALID_ARGUMENT", err)
	}
}

// pinned_client: the first caller is pinned; another without the pin waits
// and gets nothing while the pin holds; the pin works through the other
// replica; a wrong pin is refused with nothing leased; Unpin hands over.
func TestPinnedClientThroughTwoReplicas(t *testing.T) {
	o := newOperated(t, jetstream.ConsumerConfig{Durable: "pinned", PriorityGroups: []string{"main"},
		PriorityPolicy: jetstream.PriorityPolicyPinned, PinnedTTL: time.Minute}, 2)
	a, b := o.replicas[0], o.replicas[1]
	o.publish(4)
	first, err := o.fetch(t, a, &jetgatev1.FetchRequest{Batch: 1, Expires: durationpb.New(2 * time.Second)})
	if err != nil || len(first.GetMessages()) != 1 || first.GetPinId() == "" {
		t.Fatalf("first Fetch: %v %v; want a message and a pin", first, err)
	}
	pin := first.GetPinId()
	if r, err := o.fetch(t, b, &jetgatev1.FetchRequest{Batch: 1}); err != nil || len(r.GetMessages()) != 0 {
		t.Fatalf("a Fetch without the pin: %v, %d messages; want none while the pin holds", err, len(r.GetMessages()))
	}
	r, err := o.fetch(t, b, &jetgatev1.FetchRequest{Batch: 1, PinId: pin, Expires: durationpb.New(2 * time.Second)})
	if err != nil || len(r.GetMessages()) != 1 {
		t.Fatalf("a Fetch with the pin through the other replica: %v %v; want a message", r, err)
	}
	before := o.info("pinned").NumAckPending
	_, err = o.fetch(t, a, &jetgatev1.FetchRequest{Batch: 1, PinId: "not-the-pin"})
	if code, reason := codeAndReason(err); code != codes.FailedPrecondition || reason != "PIN_ID_MISMATCH" {
		t.Fatalf("a wrong pin: %v; want FAILED_PRECONDITION PIN_ID_MISMATCH", err)
	}
	if after := o.info("pinned").NumAckPending; after != before {
		t.Fatalf("a refused pin leased %d messages", after-before)
	}
	gc, err := a.GetConsumer(o.ctx(), &jetgatev1.GetConsumerRequest{Stream: stream, Consumer: "pinned"})
	if err != nil {
		t.Fatal(err)
	}
	if g := gc.GetState().GetPriorityGroups(); len(g) != 1 || g[0].GetGroup() != "main" || !g[0].GetPinned() {
		t.Fatalf("GetConsumer groups %v; want main, pinned", g)
	}
	if gc.GetConfig().GetPriorityPolicy() != jetgatev1.PriorityPolicy_PRIORITY_POLICY_PINNED_CLIENT {
		t.Errorf("policy %v", gc.GetConfig().GetPriorityPolicy())
	}
	if _, err := b.Unpin(o.ctx(), &jetgatev1.UnpinRequest{Stream: stream, Consumer: "pinned"}); err != nil {
		t.Fatalf("Unpin: %v", err)
	}
	r, err = o.fetch(t, a, &jetgatev1.FetchRequest{Batch: 1, Expires: durationpb.New(2 * time.Second)})
	if err != nil || len(r.GetMessages()) != 1 || r.GetPinId() == "" || r.GetPinId() == pin {
		t.Fatalf("after Unpin: %v %v; want a message and a new pin", r, err)
	}
}

// prioritized: with both waiting, the priority-0 caller is served before
// the priority-5 one.
func TestPrioritizedServesTheLowerPriorityFirst(t *testing.T) {
	o := newOperated(t, jetstream.ConsumerConfig{Durable: "ranked", PriorityGroups: []string{"main"},
		PriorityPolicy: jetstream.PriorityPolicyPrioritized}, 2)
	got := make(chan int32, 2)
	for i, pr := range []int32{5, 0} {
		go func() {
			r, err := o.fetch(t, o.replicas[i], &jetgatev1.FetchRequest{Batch: 1, Priority: pr, Expires: durationpb.New(3 * time.Second)})
			if err == nil && len(r.GetMessages()) == 1 {
				got <- pr
				return
			}
			got <- -1
		}()
	}
	natstest.Eventually(t, 5*time.Second, "both waiting", func() bool { return o.info("ranked").NumWaiting == 2 })
	o.publish(1)
	if first := <-got; first != 0 {
		t.Fatalf("the message went to priority %d; want 0", first)
	}
	<-got
}

// A consumer paused with nats.go from outside: a Fetch says PAUSED within a
// second and gets nothing; jetgate's Resume delivers; GetConsumer shows it.
func TestPausedConsumerSaysSoAndResumeDelivers(t *testing.T) {
	h := newHarness(t)
	h.publish(1)
	until := time.Now().Add(time.Hour)
	if _, err := h.js.PauseConsumer(h.ctx(), stream, consumer, until); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 3*time.Second, "Fetch says PAUSED", func() bool {
		r := h.fetch(h.cons, consumer, 1, 0)
		if len(r.GetMessages()) != 0 {
			t.Fatal("a paused consumer delivered")
		}
		return r.GetEmptyReason() == jetgatev1.EmptyReason_EMPTY_REASON_PAUSED
	})
	gc, err := h.cons.GetConsumer(h.ctx(), &jetgatev1.GetConsumerRequest{Stream: stream, Consumer: consumer})
	if err != nil || !gc.GetState().GetPaused() || gc.GetConfig().GetPauseUntil().AsTime().Unix() != until.Unix() {
		t.Fatalf("GetConsumer of a paused consumer: %v %v", gc, err)
	}
	// A Fetch waiting on the paused consumer gets the message once resumed.
	got := make(chan int, 1)
	go func() { got <- len(h.fetch(h.cons, consumer, 1, 5*time.Second).GetMessages()) }()
	r, err := h.cons.Resume(h.ctx(), &jetgatev1.ResumeRequest{Stream: stream, Consumer: consumer})
	if err != nil || r.GetPaused() {
		t.Fatalf("Resume: %v %v", r, err)
	}
	if n := <-got; n != 1 {
		t.Fatalf("after Resume the waiting Fetch got %d messages; want 1", n)
	}
	p, err := h.cons.Pause(h.ctx(), &jetgatev1.PauseRequest{Stream: stream, Consumer: consumer, PauseUntil: timestamppb.New(until)})
	if err != nil || !p.GetPaused() {
		t.Fatalf("Pause: %v %v", p, err)
	}
	if ci := h.info(consumer); !ci.Paused {
		t.Fatal("the server does not have the consumer paused")
	}
	_, err = h.cons.Pause(h.ctx(), &jetgatev1.PauseRequest{Stream: stream, Consumer: consumer, PauseUntil: timestamppb.New(time.Now().Add(-time.Minute))})
	if code, _ := codeAndReason(err); code != codes.InvalidArgument {
		t.Fatalf("Pause in the past: %v; want INVALID_ARGUMENT", err)
	}
	// ListConsumers shows the time set, as Pause and GetConsumer do, not
	// one worked out again from what remains (a reviewer saw it drift).
	ls, err := h.cons.ListConsumers(h.ctx(), &jetgatev1.ListConsumersRequest{Stream: stream})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ls.GetConsumers() {
		if c.GetName() == consumer && !c.GetPauseUntil().AsTime().Equal(p.GetPauseUntil().AsTime()) {
			t.Errorf("ListConsumers shows pause_until %v; Pause answered %v", c.GetPauseUntil().AsTime(), p.GetPauseUntil().AsTime())
		}
	}
}

// A Consume stream on a paused consumer heartbeats, and delivers once it is
// resumed.
func TestConsumeOnAPausedConsumerHeartbeatsAndResumes(t *testing.T) {
	h := newHarness(t)
	if _, err := h.js.PauseConsumer(h.ctx(), stream, consumer, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	h.publish(1)
	ctx, cancel := context.WithCancel(h.ctx())
	defer cancel()
	s, err := h.cons.Consume(ctx, &jetgatev1.ConsumeRequest{Stream: stream, Consumer: consumer, Heartbeat: durationpb.New(200 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Recv()
	if err != nil || len(r.GetMessages()) != 0 {
		t.Fatalf("first response on a paused consumer: %v %v; want a heartbeat", r, err)
	}
	if _, err := h.js.ResumeConsumer(h.ctx(), stream, consumer); err != nil {
		t.Fatal(err)
	}
	for {
		r, err := s.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if len(r.GetMessages()) == 1 {
			return
		}
	}
}

// A Consume stream of a pinned_client consumer keeps the pin it was given,
// shows it on each response, and ends with PIN_ID_MISMATCH once the pin has
// moved to another client.
func TestConsumeKeepsItsPinAndEndsWhenItLosesIt(t *testing.T) {
	o := newOperated(t, jetstream.ConsumerConfig{Durable: "pinned", PriorityGroups: []string{"main"},
		PriorityPolicy: jetstream.PriorityPolicyPinned, PinnedTTL: time.Minute}, 1)
	c := o.replicas[0]
	o.publish(1)
	ctx, cancel := context.WithTimeout(o.ctx(), 15*time.Second)
	defer cancel()
	s, err := c.Consume(ctx, &jetgatev1.ConsumeRequest{Stream: stream, Consumer: "pinned", Heartbeat: durationpb.New(200 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	var pin string
	for pin == "" {
		r, err := s.Recv()
		if err != nil {
			t.Fatalf("before its first message: %v", err)
		}
		if len(r.GetMessages()) > 0 {
			pin = r.GetPinId()
			if pin == "" {
				t.Fatal("the stream's first delivery came without a pin")
			}
		}
	}
	if _, err := c.Unpin(o.ctx(), &jetgatev1.UnpinRequest{Stream: stream, Consumer: "pinned"}); err != nil {
		t.Fatal(err)
	}
	o.publish(1)
	f, err := o.fetch(t, c, &jetgatev1.FetchRequest{Batch: 1, Expires: durationpb.New(3 * time.Second)})
	if err != nil || len(f.GetMessages()) != 1 || f.GetPinId() == "" || f.GetPinId() == pin {
		// The stream may have taken it first, under its old pin, before the
		// unpin reached it; then this Fetch waits for a third message.
		t.Logf("Fetch after Unpin: %v %v", f, err)
	}
	for {
		r, err := s.Recv()
		if err != nil {
			if code, reason := codeAndReason(err); code != codes.FailedPrecondition || reason != "PIN_ID_MISMATCH" {
				t.Fatalf("the stream ended with %v; want FAILED_PRECONDITION PIN_ID_MISMATCH", err)
			}
			return
		}
		if p := r.GetPinId(); p != pin && len(r.GetMessages()) > 0 {
			pin = p // pinned again before the Fetch: it now holds the new pin
		}
	}
}
