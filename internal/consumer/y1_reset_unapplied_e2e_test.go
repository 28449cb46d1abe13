package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
)

// A reset's request passes on NATS, and the replica notices it, before the
// server has applied it: a Fetch that comes then asks the server's count
// (its marks are low) and may be answered the count from before the reset.
// The reset's replay, numbered from 1, then reaches that Fetch's pull: it
// is the reset already noticed, leased, and no second reset that would void
// the replay leased here and, by the word, on every peer.
func TestAFetchAskingBeforeTheServerAppliedAResetTakesItsReplay(t *testing.T) {
	e := start(t, consumer.Config{AckWait: time.Minute})
	for _, s := range []string{"orders.1", "orders.2", "orders.3"} {
		e.publish(s, "x")
	}
	if res := e.fetch(consumer.FetchRequest{Batch: 3, Expires: time.Second}); len(res.Messages) != 3 {
		t.Fatalf("first fetch: %d messages, want 3", len(res.Messages))
	}

	e.c.ResetRequested("r1") // passed on NATS; the server has not applied it yet
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	done := e.fetchInBackground(ctx, consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second})
	natstest.Eventually(t, within, "the fetch waits on the server", func() bool { return e.info().NumWaiting == 1 })

	resp, err := e.nc.Request("$JS.API.CONSUMER.RESET."+stream+"."+name, []byte(`{"seq":1}`), within)
	if err != nil {
		t.Fatalf("reset: %v", err)
	}
	t.Logf("reset: %s", resp.Data)
	f := <-done
	if f.err != nil || len(f.res.Messages) != 1 {
		t.Fatalf("the waiting fetch: %d messages, %v; want the replay's first", len(f.res.Messages), f.err)
	}
	if md := f.res.Messages[0].Meta; md.StreamSeq != 1 || md.ConsumerSeq != 1 {
		t.Fatalf("the waiting fetch got stream %d as consumer %d; want 1 as 1", md.StreamSeq, md.ConsumerSeq)
	}
	if n := e.c.Counts().Resets.Load(); n != 1 {
		t.Fatalf("resets noticed: %d; want 1, the one requested (its replay is no second)", n)
	}
	ackToken(t, e, f.res.Messages[0].Token, "")
}
