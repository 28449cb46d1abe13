package server_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// DESIGN 17: "the limits (max_ack_pending, max_waiting, max_request_batch /
// expires / max_bytes, priority policy) come from jetgate's own
// create/update answer and from every later info or answer, never from a
// view taken before them. A change made elsewhere is noticed without
// polling". An operator lowers max_request_batch with nats.go's
// UpdateConsumer (as `nats consumer edit` would); once the server has
// answered, a caller's Fetch of batch 50 must be served within the new
// bound (jetgate clamps a pull to the view's max_request_batch), never
// refused by the server's 409 "Exceeded MaxRequestBatch" as PULL_REFUSED.
// Each refusal is then retried (every 100ms, nothing changed on the server)
// for up to 12s, past the 10s refresh of a busy consumer's info.
func TestAFetchAfterAMaxRequestBatchCutIsServed(t *testing.T) {
	h := newHarness(t)
	h.publish(100)
	_ = h.fetch(h.cons, consumer, 1, 0) // bound
	fetch := func() (*jetgatev1.FetchResponse, error) {
		return h.cons.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: 50, Expires: durationpb.New(0)})
	}
	refused := 0
	for round := range 40 {
		cfg := h.info(consumer).Config
		cfg.MaxRequestBatch = 45 - round
		if _, err := h.js.UpdateConsumer(h.ctx(), stream, cfg); err != nil {
			t.Fatal(err)
		}
		resp, err := fetch()
		if err != nil {
			refused++
			c, reason := codeAndReason(err)
			msg := statusMessage(err)
			since, tries := time.Now(), 0
			for ; time.Since(since) < 12*time.Second; tries++ {
				if _, err = fetch(); err == nil {
					break
				}
				<-time.After(100 * time.Millisecond) // a caller's retry pace, not synchronisation
			}
			if err != nil {
				t.Fatalf("round %d (max_request_batch now %d): Fetch %v %s: %s; and still refused %v later (%d retries), nothing changed on the server",
					round, cfg.MaxRequestBatch, c, reason, msg, time.Since(since).Round(100*time.Millisecond), tries)
			}
			t.Errorf("round %d (max_request_batch now %d): Fetch %v %s: %s (served again after %d retries)",
				round, cfg.MaxRequestBatch, c, reason, msg, tries)
			continue
		}
		if n := len(resp.GetMessages()); n > cfg.MaxRequestBatch {
			t.Errorf("round %d: %d messages, over max_request_batch %d", round, n, cfg.MaxRequestBatch)
		}
		var toks []string
		for _, m := range resp.GetMessages() {
			toks = append(toks, m.GetToken())
		}
		if len(toks) > 0 {
			wantNoFailures(t, ack(t, h, h.cons, toks...))
		}
		h.publish(len(toks))
	}
}
