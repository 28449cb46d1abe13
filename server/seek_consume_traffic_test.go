package server_test

import (
	"testing"
	"time"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// As TestAForwardSeekThenTrafficReachesAPullWaitingBehindMoreThanItsMarks,
// with idle Consume streams (long-lived pulls, one message of room each):
// 8 on B, then one on A, all waiting through a forward seek; the 9 messages
// published after it reach the streams, each once.
func TestAForwardSeekThenTrafficReachesIdleConsumeStreams(t *testing.T) {
	const streams = 9
	h := newHarness(t) // ack_wait 30s; replica A is h.cons
	_, b, _ := h.startGateway()
	h.publish(5)
	ackAll(t, h, h.cons, h.fetchN(h.cons, 5)) // the marks: 5
	var css []*consumeStream
	for i := range streams {
		c := b
		if i == streams-1 {
			c = h.cons
		}
		css = append(css, h.consume(c, &jetgatev1.ConsumeRequest{MaxMessages: 1}))
		natstest.Eventually(t, 5*time.Second, "the stream's pull waits", func() bool { return h.info(consumer).NumWaiting >= i+1 })
	}
	if _, err := h.seek(h.cons, seekSeq(6)); err != nil {
		t.Fatalf("seek past the end: %v", err)
	}
	seqs := h.publish(streams)
	var got []*jetgatev1.Message
	deadline := time.After(10 * time.Second) // well within ack_wait
	for len(got) < len(seqs) {
		select {
		case <-deadline:
			t.Fatalf("the streams brought %d of %d messages within 10s; num_ack_pending %d (the rest leased to nobody until ack_wait)",
				len(got), len(seqs), h.info(consumer).NumAckPending)
		case <-time.After(10 * time.Millisecond):
		}
		for _, cs := range css {
			select {
			case r := <-cs.resps:
				got = append(got, r.GetMessages()...)
			default:
			}
		}
	}
	wantEach(t, got, seqs)
	ackAll(t, h, b, got)
	if ci := h.info(consumer); ci.NumAckPending != 0 {
		t.Errorf("num_ack_pending %d once all was acked, want 0", ci.NumAckPending)
	}
}
