package server_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// A dead-letter stream that denies deletes (deny_delete, or sealed) keeps
// every letter Redrive puts back: Redrive said UNAVAILABLE, "republished but
// not removed; redrive it again", with the letter put back, and each
// Redrive after the original stream's duplicate window (2 minutes by
// default) put the same letter back once more. A letter that cannot be
// removed is not put back: Redrive says why, FAILED_PRECONDITION, and
// nothing is published.
func TestRedriveOfADeadLetterStreamThatDeniesDeletesPutsNothingBack(t *testing.T) {
	e := newDLEnv(t)
	ctx := context.Background()
	if err := e.js.DeleteStream(ctx, "DLQ"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}, DenyDelete: true}); err != nil {
		t.Fatal(err)
	}
	g := e.gateway()
	e.termIsDeadLettered(g)
	dl := e.deadLetters()[0]

	for range 2 {
		resp, err := g.Consumers.Redrive(ctx, &jetgatev1.RedriveRequest{Stream: stream, Consumer: consumer})
		if err == nil && resp.GetRedriven() != 0 {
			t.Fatalf("redrive: %v; want nothing redriven", resp)
		}
		if err == nil {
			if len(resp.GetFailures()) != 1 || resp.GetFailures()[0].GetCode() != int32(codes.FailedPrecondition) {
				t.Fatalf("redrive of all: %v; want one FAILED_PRECONDITION failure", resp)
			}
		} else {
			wantCode(t, err, codes.FailedPrecondition, "")
		}
		resp, err = g.Consumers.Redrive(ctx, &jetgatev1.RedriveRequest{Stream: stream, Consumer: consumer, Seqs: []uint64{dl.Sequence}})
		if err == nil && (resp.GetRedriven() != 0 || len(resp.GetFailures()) != 1 || resp.GetFailures()[0].GetCode() != int32(codes.FailedPrecondition)) {
			t.Fatalf("redrive of seq %d: %v; want one FAILED_PRECONDITION failure", dl.Sequence, resp)
		}
	}
	if n := len(natstest.StreamMsgs(t, e.js, stream, "orders.us")); n != 1 {
		t.Fatalf("ORDERS holds %d messages on orders.us after the Redrives; want the original alone", n)
	}
}
