package server_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// An operator moves the dead letters to a stream of another name (DLQ
// deleted, DLQ2 made on the same subject): the worker's letters go to DLQ2,
// and GetConsumer, ListDeadLetters and Redrive follow them there. Before,
// all three kept asking for DLQ until a restart: GetConsumer failed
// UNAVAILABLE ("retry") for good, ListDeadLetters said STREAM_NOT_FOUND,
// Redrive NATS_UNAVAILABLE. With no stream on the subject at all,
// GetConsumer still answers (no letter waits) and the other two say so.
func TestDeadLettersFollowTheirSubjectToAStreamMadeUnderAnotherName(t *testing.T) {
	e := newDLEnv(t)
	g := e.gateway()
	ctx := context.Background()
	e.termIsDeadLettered(g)
	if err := e.js.DeleteStream(ctx, "DLQ"); err != nil {
		t.Fatal(err)
	}
	natstest.Stream(t, e.nc, "DLQ2", "dlq.>")

	e.publish("orders.us", "second", nil)
	ms := fetchVia(t, g.Consumers, 1, 5*time.Second)
	if _, err := g.Consumers.Term(ctx, &jetgatev1.TermRequest{Stream: stream, Consumer: consumer, Tokens: []string{ms[0].GetToken()}}); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 15*time.Second, "the letter in DLQ2", func() bool {
		return len(natstest.StreamMsgs(t, e.js, "DLQ2", dlqSubject)) == 1
	})

	st, err := g.Consumers.GetConsumer(ctx, &jetgatev1.GetConsumerRequest{Stream: stream, Consumer: consumer})
	if err != nil || st.GetDeadLetters() != 1 {
		t.Fatalf("GetConsumer with the letters in DLQ2: deadLetters %d, %v; want 1", st.GetDeadLetters(), err)
	}
	page, err := g.Consumers.ListDeadLetters(ctx, &jetgatev1.ListDeadLettersRequest{Stream: stream, Consumer: consumer})
	if err != nil || len(page.GetDeadLetters()) != 1 || page.GetTotal() != 1 {
		t.Fatalf("ListDeadLetters with the letters in DLQ2: %v, %v; want the one", page, err)
	}
	rd, err := g.Consumers.Redrive(ctx, &jetgatev1.RedriveRequest{Stream: stream, Consumer: consumer})
	if err != nil || rd.GetRedriven() != 1 || len(rd.GetFailures()) != 0 {
		t.Fatalf("Redrive of all with the letters in DLQ2: %v, %v; want 1 redriven", rd, err)
	}

	if err := e.js.DeleteStream(ctx, "DLQ2"); err != nil {
		t.Fatal(err)
	}
	st, err = g.Consumers.GetConsumer(ctx, &jetgatev1.GetConsumerRequest{Stream: stream, Consumer: consumer})
	if err != nil || st.GetDeadLetters() != 0 {
		t.Fatalf("GetConsumer with no stream on the dead-letter subject: deadLetters %d, %v; want 0 and no error", st.GetDeadLetters(), err)
	}
	_, err = g.Consumers.ListDeadLetters(ctx, &jetgatev1.ListDeadLettersRequest{Stream: stream, Consumer: consumer})
	wantCode(t, err, codes.FailedPrecondition, "DEAD_LETTER_STREAM_NOT_FOUND")
	_, err = g.Consumers.Redrive(ctx, &jetgatev1.RedriveRequest{Stream: stream, Consumer: consumer})
	wantCode(t, err, codes.FailedPrecondition, "DEAD_LETTER_STREAM_NOT_FOUND")
	_, err = g.Consumers.Redrive(ctx, &jetgatev1.RedriveRequest{Stream: stream, Consumer: consumer, Seqs: []uint64{1}})
	wantCode(t, err, codes.FailedPrecondition, "DEAD_LETTER_STREAM_NOT_FOUND")

	// Made again, the letters that waited meanwhile are stored there.
	e.publish("orders.us", "third", nil)
	ms = fetchVia(t, g.Consumers, 1, 5*time.Second)
	if _, err := g.Consumers.Term(ctx, &jetgatev1.TermRequest{Stream: stream, Consumer: consumer, Tokens: []string{ms[0].GetToken()}}); err != nil {
		t.Fatal(err)
	}
	natstest.Stream(t, e.nc, "DLQ3", "dlq.>")
	natstest.Eventually(t, 20*time.Second, "the letter in DLQ3", func() bool {
		return len(natstest.StreamMsgs(t, e.js, "DLQ3", dlqSubject)) == 1
	})
	page, err = g.Consumers.ListDeadLetters(ctx, &jetgatev1.ListDeadLettersRequest{Stream: stream, Consumer: consumer})
	if err != nil || len(page.GetDeadLetters()) != 1 {
		t.Fatalf("ListDeadLetters with the letters in DLQ3: %v, %v", page, err)
	}
}
