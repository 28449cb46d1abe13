package server_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// A replica's marks that are not at 0 but out of date (it last received 5
// deliveries while another replica made 100) are below what the server had
// delivered when its pull was sent. The server hands a seek's replay,
// numbered from 1, to the pulls waiting in its line one message each in
// turn: where more pulls than those marks wait ahead of that replica's, the
// replay reaches its pull numbered past them. It must still show the reset
// there, and be leased and handed out, not dropped to come back after
// ack_wait (30s here): each message of the replay handed out once.

// waitingInLine starts a Fetch of batch on c that waits up to 10s, and
// returns once the server counts n pulls waiting.
func (h *harness) waitingInLine(c jetgatev1.ConsumerServiceClient, batch int32, n int) <-chan *jetgatev1.FetchResponse {
	h.t.Helper()
	done := make(chan *jetgatev1.FetchResponse, 1)
	go func() {
		r, err := c.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: batch, Expires: durationpb.New(10 * time.Second)})
		if err != nil {
			h.t.Errorf("the waiting fetch: %v", err)
		}
		done <- r
	}()
	natstest.Eventually(h.t, 5*time.Second, "the fetch waits on the server", func() bool { return h.info(consumer).NumWaiting >= n })
	return done
}

// ackAll acks msgs through c.
func ackAll(t *testing.T, h *harness, c jetgatev1.ConsumerServiceClient, msgs []*jetgatev1.Message) {
	t.Helper()
	toks := make([]string, len(msgs))
	for i, m := range msgs {
		toks[i] = m.GetToken()
	}
	wantNoFailures(t, ack(t, h, c, toks...))
}

func TestASeekReplaysPastTheStaleMarksOfAnIdleReplicasWaitingFetch(t *testing.T) {
	const ahead = 8 // B's pulls in line before A's, more than A's marks
	for _, via := range []string{"the other replica", "the idle replica"} {
		t.Run("seek through "+via, func(t *testing.T) {
			h := newHarness(t) // ack_wait 30s; replica A is h.cons
			_, b, _ := h.startGateway()
			seqs := h.publish(5)
			ackAll(t, h, h.cons, h.fetchN(h.cons, 5)) // A's marks: 5
			seqs = append(seqs, h.publish(100)...)
			ackAll(t, h, b, h.fetchN(b, 100)) // the server's count: 105

			var first []<-chan *jetgatev1.FetchResponse
			for i := range ahead {
				first = append(first, h.waitingInLine(b, 1, i+1))
			}
			rest := h.waitingInLine(h.cons, 100, ahead+1) // A's, marked at 5
			seeker := b
			if via == "the idle replica" {
				seeker = h.cons
			}
			start := time.Now()
			if _, err := h.seek(seeker, seekSeq(seqs[0])); err != nil {
				t.Fatalf("seek to the start: %v", err)
			}
			got := collect(append(first, rest)) // who gets which is the server's turn, and the withdrawn pulls' again
			t.Logf("the waiting fetches brought %d messages after %v; the server holds num_ack_pending %d",
				len(got), time.Since(start).Round(time.Millisecond), h.info(consumer).NumAckPending)
			if len(got) < len(seqs) {
				// A Fetch answers once its first messages lingered, and under
				// load the replay may not all have come by then: the rest is
				// the server's still, for the next Fetch. One dropped unleased
				// would not come again before ack_wait (fetchN fails).
				got = append(got, h.fetchN(h.cons, len(seqs)-len(got))...)
			}
			wantEach(t, got, seqs)
			// Every lease of the replay holds: the last of them settles it.
			ackAll(t, h, b, got) // A's tokens and B's alike
			if ci := h.info(consumer); ci.NumAckPending != 0 {
				t.Errorf("num_ack_pending %d once the replay was acked, want 0", ci.NumAckPending)
			}
		})
	}
}
