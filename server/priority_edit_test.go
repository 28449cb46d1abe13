package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"google.golang.org/protobuf/types/known/durationpb"
)

// DESIGN 17 ("A change made elsewhere is noticed without polling:
// consumer create/update requests pass on subjects jetgate can see") and
// DESIGN 10 (Fetch's group unset: the consumer's group when it has exactly
// one). An operator gives a consumer jetgate serves a priority group while
// jetgate runs; a Fetch that names no group must then be served.
func TestAPriorityGroupAddedByAnOperatorIsFollowed(t *testing.T) {
	o := newOperated(t, jetstream.ConsumerConfig{Durable: "ops", AckWait: 30 * time.Second}, 1)
	o.publish(2)
	r, err := o.fetch(t, o.replicas[0], &jetgatev1.FetchRequest{Batch: 1})
	if err != nil || len(r.GetMessages()) != 1 {
		t.Fatalf("before the edit: %v %v", r, err)
	}
	cfg := jetstream.ConsumerConfig{Durable: "ops", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
		PriorityGroups: []string{"jobs"}, PriorityPolicy: jetstream.PriorityPolicyOverflow}
	if _, err := o.js.UpdateConsumer(o.ctx(), stream, cfg); err != nil {
		t.Fatalf("operator's update: %v", err)
	}
	r, err = o.fetch(t, o.replicas[0], &jetgatev1.FetchRequest{Batch: 1, Expires: durationpb.New(time.Second)})
	if err != nil || len(r.GetMessages()) != 1 {
		c, reason := codeAndReason(err)
		t.Fatalf("a Fetch naming no group after the operator gave the consumer one group: %v %v %v; want the second message", r, c, reason)
	}
}

// As above, but the Fetch comes a while after the edit (3s of tries): the
// follow of the update request must have brought the group by then.
func TestAPriorityGroupAddedByAnOperatorIsFollowedSoon(t *testing.T) {
	o := newOperated(t, jetstream.ConsumerConfig{Durable: "ops", AckWait: 30 * time.Second}, 1)
	o.publish(2)
	r, err := o.fetch(t, o.replicas[0], &jetgatev1.FetchRequest{Batch: 1})
	if err != nil || len(r.GetMessages()) != 1 {
		t.Fatalf("before the edit: %v %v", r, err)
	}
	cfg := jetstream.ConsumerConfig{Durable: "ops", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
		PriorityGroups: []string{"jobs"}, PriorityPolicy: jetstream.PriorityPolicyOverflow}
	if _, err := o.js.UpdateConsumer(o.ctx(), stream, cfg); err != nil {
		t.Fatalf("operator's update: %v", err)
	}
	var last error
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		r, err = o.fetch(t, o.replicas[0], &jetgatev1.FetchRequest{Batch: 1, Expires: durationpb.New(200 * time.Millisecond)})
		if err == nil && len(r.GetMessages()) == 1 {
			return
		}
		last = err
	}
	c, reason := codeAndReason(last)
	t.Fatalf("3s after the operator gave the consumer one group, a Fetch naming none still fails: %v %v", c, reason)
}

// A Consume stream open when an operator gives its consumer a group goes
// on: its pulls, refused for naming none, take the group the server says.
func TestAConsumeStreamFollowsAPriorityGroupAddedByAnOperator(t *testing.T) {
	o := newOperated(t, jetstream.ConsumerConfig{Durable: "ops", AckWait: 30 * time.Second}, 1)
	ctx, cancel := context.WithCancel(o.ctx())
	defer cancel()
	st, err := o.replicas[0].Consume(ctx, &jetgatev1.ConsumeRequest{Stream: stream, Consumer: "ops", MaxMessages: 10, Heartbeat: durationpb.New(200 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Header(); err != nil {
		t.Fatal(err)
	}
	cfg := jetstream.ConsumerConfig{Durable: "ops", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
		PriorityGroups: []string{"jobs"}, PriorityPolicy: jetstream.PriorityPolicyOverflow}
	if _, err := o.js.UpdateConsumer(o.ctx(), stream, cfg); err != nil {
		t.Fatalf("operator's update: %v", err)
	}
	for range 8 { // heartbeats past the pull open at the update (a second at most)
		if r, err := st.Recv(); err != nil || len(r.GetMessages()) != 0 {
			t.Fatalf("the stream ended, or sent a message: %v", err)
		}
	}
	o.publish(1)
	for {
		r, err := st.Recv()
		if err != nil {
			t.Fatalf("the stream ended: %v", err)
		}
		if len(r.GetMessages()) == 1 {
			return
		}
	}
}

// A stream holding the pin of a pinned_client consumer whose policy an
// operator changes to overflow goes on: it put its old pin on every pull
// after it took its priority again, refused once more, and ended
// PULL_REFUSED. (The server keeps its pin after the change and holds pulls
// without it until the pin's TTL passes: hence the short pinned_ttl.)
func TestAConsumeStreamHoldingAPinFollowsAPolicyChange(t *testing.T) {
	o := newOperated(t, jetstream.ConsumerConfig{Durable: "pinp", AckWait: 30 * time.Second,
		PriorityGroups: []string{"jobs"}, PriorityPolicy: jetstream.PriorityPolicyPinned, PinnedTTL: 2 * time.Second}, 1)
	ctx, cancel := context.WithCancel(o.ctx())
	defer cancel()
	st, err := o.replicas[0].Consume(ctx, &jetgatev1.ConsumeRequest{Stream: stream, Consumer: "pinp", MaxMessages: 10, Heartbeat: durationpb.New(200 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	o.publish(1)
	for {
		r, err := st.Recv()
		if err != nil {
			t.Fatalf("before the edit, the stream ended: %v", err)
		}
		if len(r.GetMessages()) == 1 {
			if r.GetPinId() == "" {
				t.Fatal("no pin given")
			}
			break
		}
	}
	cfg := jetstream.ConsumerConfig{Durable: "pinp", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
		PriorityGroups: []string{"jobs"}, PriorityPolicy: jetstream.PriorityPolicyOverflow}
	if _, err := o.js.UpdateConsumer(o.ctx(), stream, cfg); err != nil {
		t.Fatalf("operator's update: %v", err)
	}
	for range 8 { // heartbeats past the pull open at the update
		if _, err := st.Recv(); err != nil {
			c, reason := codeAndReason(err)
			t.Fatalf("the stream ended after the operator changed the policy to overflow: %v %v %v", c, reason, err)
		}
	}
	o.publish(1)
	for {
		r, err := st.Recv()
		if err != nil {
			t.Fatalf("the stream ended: %v", err)
		}
		if len(r.GetMessages()) == 1 {
			// The pin is gone with the policy: a caller shown it would
			// present it again (a reviewer saw every response keep it).
			if p := r.GetPinId(); p != "" {
				t.Errorf("a message after the policy change came with pin %q; want none", p)
			}
			return
		}
	}
}
