package server_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// An Extend by 12s on a 30s ack_wait is cut to 12s (the server's deadline
// is later). An operator then cuts ack_wait to 10s: the server now
// redelivers 10s after the Extend's +WPI. An Ack sent at once, well within
// those 10s, must settle the lease: the caller holds it and the server has
// redelivered nothing.
func TestALeaseCutToAnExtendsDurationLastsUntilTheServersNewDeadline(t *testing.T) {
	h := newHarness(t, ackWait(30*time.Second))
	h.publish(1)
	m := h.fetchOne(time.Second)
	ext, err := h.cons.Extend(h.ctx(), &jetgatev1.ExtendRequest{Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()}, Duration: durationpb.New(12 * time.Second)})
	if err != nil || len(ext.GetFailures()) != 0 {
		t.Fatalf("extend: %v %v", ext, err)
	}
	extended := time.Now()
	cfg := h.info(consumer).Config
	cfg.AckWait = 10 * time.Second
	if _, err := h.js.UpdateConsumer(h.ctx(), stream, cfg); err != nil {
		t.Fatal(err)
	}
	fs := ack(t, h, h.cons, ext.GetLeases()[0].GetNewToken())
	t.Logf("ack %v after the Extend", time.Since(extended).Round(time.Millisecond))
	wantNoFailures(t, fs)
	if ci := h.info(consumer); ci.NumAckPending != 0 || ci.NumRedelivered != 0 {
		t.Errorf("after the ack: ack pending %d, redelivered %d; want 0, 0", ci.NumAckPending, ci.NumRedelivered)
	}
}
