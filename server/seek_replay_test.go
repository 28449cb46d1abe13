package server_test

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// A seek's replay goes to the pulls already waiting on the server (it keeps
// them through a reset), numbered anew from 1. A pull sent while its replica
// knew of no delivery since the last reset (or since it bound) has its
// marks from the server's count, so that the replay shows the reset there
// and is leased, not dropped to come back after ack_wait (30s here).

// waitingBatch starts a Fetch of batch on c that waits up to 10s, and
// returns once the server counts it waiting.
func (h *harness) waitingBatch(c jetgatev1.ConsumerServiceClient, batch int32) <-chan *jetgatev1.FetchResponse {
	h.t.Helper()
	done := make(chan *jetgatev1.FetchResponse, 1)
	go func() {
		r, err := c.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: batch, Expires: durationpb.New(10 * time.Second)})
		if err != nil {
			h.t.Errorf("the waiting fetch: %v", err)
		}
		done <- r
	}()
	natstest.Eventually(h.t, 5*time.Second, "the fetch waits on the server", func() bool { return h.info(consumer).NumWaiting > 0 })
	return done
}

// wantReplay checks that got holds the messages of seqs, in order.
func wantReplay(t *testing.T, h *harness, got []*jetgatev1.Message, seqs []uint64) {
	t.Helper()
	if len(got) != len(seqs) {
		t.Fatalf("the replay brought %d messages, want %d; the server holds num_ack_pending %d (leased to nobody until ack_wait)",
			len(got), len(seqs), h.info(consumer).NumAckPending)
	}
	for i, m := range got {
		if m.GetMetadata().GetStreamSeq() != seqs[i] {
			t.Errorf("message %d of the replay: stream seq %d, want %d", i, m.GetMetadata().GetStreamSeq(), seqs[i])
		}
	}
}

func TestASeekReplaysToAFetchWaitingSinceAnEarlierSeek(t *testing.T) {
	h := newHarness(t) // ack_wait 30s
	seqs := h.publish(3)
	if _, err := h.seek(h.cons, &jetgatev1.SeekRequest{Target: &jetgatev1.SeekRequest_Time{Time: timestamppb.Now()}}); err != nil {
		t.Fatalf("seek to now (skip the backlog): %v", err)
	}
	done := h.waitingBatch(h.cons, 3)
	if _, err := h.seek(h.cons, seekSeq(seqs[0])); err != nil {
		t.Fatalf("seek to the start: %v", err)
	}
	wantReplay(t, h, (<-done).GetMessages(), seqs)
}

func TestASeekReplaysToAConsumeOpenSinceASkip(t *testing.T) {
	h := newHarness(t)
	seqs := h.publish(3)
	if _, err := h.seek(h.cons, &jetgatev1.SeekRequest{Target: &jetgatev1.SeekRequest_Time{Time: timestamppb.Now()}}); err != nil {
		t.Fatalf("seek to now (skip the backlog): %v", err)
	}
	cs := h.consume(h.cons, &jetgatev1.ConsumeRequest{MaxMessages: 10})
	natstest.Eventually(t, 5*time.Second, "the stream's pull waits on the server", func() bool { return h.info(consumer).NumWaiting > 0 })
	if _, err := h.seek(h.cons, seekSeq(seqs[0])); err != nil {
		t.Fatalf("seek to the start: %v", err)
	}
	// The replay comes whole well within ack_wait (30s): leased, none of it
	// dropped. Not always in order: the replica withdraws the stream's pull
	// from before the seek as the request passes (withdraw.go), and where
	// the server delivers message 1 to it just after that, it finds no one
	// to take it and delivers it again at once, behind message 2.
	var got []uint64
	deadline := time.Now().Add(8 * time.Second)
	for len(got) < len(seqs) {
		msgs, _ := cs.next(t, time.Until(deadline))
		for _, m := range msgs {
			got = append(got, m.GetMetadata().GetStreamSeq())
		}
	}
	if slices.Sort(got); !slices.Equal(got, seqs) {
		t.Errorf("after the seek: stream seqs %v, want %v", got, seqs)
	}
}

func TestASeekReplaysToAFetchWaitingOnAReplicaThatReceivedNothing(t *testing.T) {
	h := newHarness(t) // ack_wait 30s
	_, b, _ := h.startGateway()
	seqs := h.publish(3)
	var toks []string
	for _, m := range h.fetchN(b, 3) {
		toks = append(toks, m.GetToken())
	}
	wantNoFailures(t, ack(t, h, b, toks...))
	done := h.waitingBatch(h.cons, 3) // on A, which has received nothing of the consumer
	if _, err := h.seek(b, seekSeq(seqs[0])); err != nil {
		t.Fatalf("seek through B: %v", err)
	}
	wantReplay(t, h, (<-done).GetMessages(), seqs)
}
