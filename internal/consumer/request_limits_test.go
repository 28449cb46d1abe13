package consumer_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
)

// DESIGN 17: the limits on a pull request (max_request_batch / expires /
// max_bytes) are the server's, from every info or answer. An operator
// lowers max_request_batch below what callers ask; a pull over it is
// refused (409 "Exceeded MaxRequestBatch"), so jetgate bounds its pulls by
// the limit: at once by what an update request that passed asks, and after
// a refusal (the request went unseen), by the info it then asks once.

// lowerMaxBatch publishes n messages and has an operator lower the
// consumer's max_request_batch to most, unseen by the Consumer.
func (e *env) lowerMaxBatch(n, most int) {
	e.t.Helper()
	for i := range n {
		e.publish(fmt.Sprintf("orders.%d", i), "m")
	}
	e.edit(func(cfg *jetstream.ConsumerConfig) { cfg.MaxRequestBatch = most })
}

func TestAFetchRefusedOverALoweredMaxRequestBatchIsServedWithinIt(t *testing.T) {
	e := start(t, consumer.Config{AckWait: 30 * time.Second, MaxAckPending: 1024})
	e.lowerMaxBatch(20, 5)
	got := e.fetch(consumer.FetchRequest{Batch: 20})
	if n := len(got.Messages); n == 0 || n > 5 {
		t.Errorf("Fetch of 20: %d messages, want 1 to 5 (max_request_batch)", n)
	}
}

func TestAConsumeRefusedOverALoweredMaxRequestBatchIsServedWithinIt(t *testing.T) {
	e := start(t, consumer.Config{AckWait: 30 * time.Second, MaxAckPending: 1024})
	e.lowerMaxBatch(20, 5)
	sent := make(chan []*consumer.Delivery, 16)
	ended := consumeInto(t, e, consumer.ConsumeRequest{MaxMessages: 20, Heartbeat: time.Hour}, sent, nil)
	select {
	case ds := <-sent:
		if len(ds) > 5 {
			t.Errorf("a response of %d messages, over max_request_batch 5", len(ds))
		}
	case err := <-ended:
		t.Fatalf("the stream ended: %v", err)
	case <-time.After(within):
		t.Fatal("the stream sent nothing")
	}
}

// The server refuses a pull over the limits an update asks from the moment
// it applies the update, before any info says so: the first pull after
// the request passed is within them.
func TestAnUpdateRequestThatPassedBoundsTheNextPullAtOnce(t *testing.T) {
	e := start(t, consumer.Config{AckWait: 30 * time.Second, MaxAckPending: 1024})
	e.lowerMaxBatch(20, 5)
	e.c.Update(updateRequest(t, e.info().Config)) // as it passes; no info follows
	tp := startTap(t, e.ns)
	got := e.fetch(consumer.FetchRequest{Batch: 20})
	if n := len(got.Messages); n == 0 || n > 5 {
		t.Errorf("Fetch of 20: %d messages, want 1 to 5 (max_request_batch)", n)
	}
	first := tp.before(tp.waitFor(t, 0, "a pull request", pullRequest) + 1)
	var req struct {
		Batch int `json:"batch"`
	}
	if err := json.Unmarshal(first[len(first)-1].Data, &req); err != nil {
		t.Fatal(err)
	}
	if req.Batch > 5 {
		t.Errorf("first pull after the update request asks %d messages; the server refuses more than 5", req.Batch)
	}
}
