package consumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// On last_per_subject, where first deliveries say nothing by their stream
// sequences, a consumer reset that no replica saw pass shows only in the
// consumer sequences: the first delivery this replica receives after it,
// numbered exactly at the highest it had received before (another client
// took the one below), is the reset, and voids the lease of a delivery made
// before it, whose stale Ack would settle the delivery another client now
// holds.
func TestADeliveryAtTheFloorAfterAResetVoidsOnLastPerSubject(t *testing.T) {
	last := jetstream.DeliverLastPerSubjectPolicy
	e := start(t, consumer.Config{AckWait: time.Minute, DeliverPolicy: &last, FilterSubjects: []string{"orders.>"}})
	s1 := e.publish("orders.a", "one")
	s2 := e.publish("orders.b", "two")
	s3 := e.publish("orders.c", "three")

	first := e.fetch(consumer.FetchRequest{Batch: 2, Expires: 5 * time.Second, Principal: "alice"})
	if len(first.Messages) != 2 || first.Messages[0].Meta.StreamSeq != s1 || first.Messages[1].Meta.StreamSeq != s2 {
		t.Fatalf("first fetch: %d messages, want stream sequences %d and %d", len(first.Messages), s1, s2)
	}
	if first.Messages[1].Meta.ConsumerSeq != 2 {
		t.Fatalf("the second delivery has consumer sequence %d, want 2", first.Messages[1].Meta.ConsumerSeq)
	}
	ackToken(t, e, first.Messages[0].Token, "alice") // the ack floor moves to s1
	stale := first.Messages[1].Token

	// The reset goes back to the ack floor: s2 comes again as consumer
	// sequence 1, s3 as 2. Nothing of this Consumer sees the request.
	resp, err := e.nc.Request("$JS.API.CONSUMER.RESET."+stream+"."+name, nil, within)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		ResetSeq uint64 `json:"reset_seq"`
		Error    *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &r); err != nil || r.Error != nil || r.ResetSeq != s2 {
		t.Fatalf("reset: %s (%v); want a reset to %d", resp.Data, err, s2)
	}
	other := e.pullPlain(within)
	if other == nil {
		t.Fatal("the other client got nothing after the reset")
	}
	if md, err := other.Metadata(); err != nil || md.Sequence.Stream != s2 || md.Sequence.Consumer != 1 {
		t.Fatalf("the other client's delivery: %+v %v; want %d as consumer sequence 1", md, err, s2)
	}

	next := e.fetch(consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second, Principal: "alice"})
	if len(next.Messages) != 1 || next.Messages[0].Meta.StreamSeq != s3 || next.Messages[0].Meta.ConsumerSeq != 2 {
		t.Fatalf("fetch after the reset: %+v; want %d as consumer sequence 2", next.Messages, s3)
	}

	cl, err := e.keys.Open(stale, stream, name, "alice")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	out := e.c.Settle(ctx, lease.OpAck, []token.Claims{cl}, settle.Args{})
	if !errors.Is(out[0].Err, errs.ErrLeaseExpired) {
		t.Fatalf("the Ack of a lease from before the reset: %v; want LEASE_EXPIRED", out[0].Err)
	}
	if n := e.info().NumAckPending; n != 2 {
		t.Fatalf("ack pending %d, want 2: the other client's delivery of %d and this Fetch's of %d", n, s2, s3)
	}
	if n := e.c.Counts().Resets.Load(); n != 1 {
		t.Fatalf("resets noticed: %d, want 1", n)
	}
}
