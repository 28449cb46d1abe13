package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// nakedThenReset fetches one message (data), naks it through the Consumer
// (the Nak's claim in the ledger), and resets the consumer to the message:
// the server delivers it again with its count restarted, so the delivery
// after the reset has the ledger key of the one nak'ed before it. It
// returns the claims of that later delivery, fetched.
func nakedThenReset(t *testing.T, e *env, data string) token.Claims {
	t.Helper()
	before := fetchOne(t, e, data)
	if out := e.c.Settle(context.Background(), lease.OpNak, []token.Claims{before}, settle.Args{}); out[0].Err != nil {
		t.Fatalf("the Nak before the reset: %v", out[0].Err)
	}
	if _, err := e.nc.Request("$JS.API.CONSUMER.RESET."+stream+"."+name, nil, within); err != nil {
		t.Fatal(err)
	}
	var after token.Claims
	natstest.Eventually(t, within, "the message again with its count restarted", func() bool {
		res := e.fetch(consumer.FetchRequest{Batch: 1, Expires: time.Second})
		if len(res.Messages) == 0 {
			return false
		}
		after = e.c.ClaimsOf(res.Messages[0])
		return true
	})
	if after.StreamSeq != before.StreamSeq || after.Delivered != before.Delivered {
		t.Fatalf("after the reset: stream sequence %d delivery %d; want %d delivery %d",
			after.StreamSeq, after.Delivered, before.StreamSeq, before.Delivered)
	}
	if n := e.c.Counts().Resets.Load(); n == 0 {
		t.Fatal("the reset was not noticed")
	}
	return after
}

// A Nak of a delivery made after a consumer reset is sent, though the
// ledger holds a Nak of the same message and count from before the reset
// (a reset restarts the counts): that record is an earlier delivery's. It
// used to make the later Nak "done" unsent, and the message came back only
// after ack_wait.
func TestANakAfterAResetIsSentOverTheSameCountsNakFromBeforeIt(t *testing.T) {
	e := startLedgered(t, consumer.Config{AckWait: time.Minute, MaxAckPending: 1024})
	after := nakedThenReset(t, e, "one")
	nakComesBack(t, e, after, "one")
}

// The caller's retry of an Ack whose answer never came, of a delivery made
// after a consumer reset, asks the ledger (as an adopted lease's settle
// does) and is sent over a Nak of the same message and count recorded
// before the reset: that record is an earlier delivery's, not another
// holder's Nak of this one. It used to be refused LEASE_SETTLED, and the
// caller left not knowing whether its Ack took (the fault suite's reset
// scenario saw such an ambiguous message).
func TestARetryAfterAResetIsSentOverTheSameCountsNakFromBeforeIt(t *testing.T) {
	e, proxy, settles := cutOff(t, consumer.Config{AckWait: time.Minute, MaxAckPending: 1024}, withLedger)
	after := nakedThenReset(t, e, "one")
	loseSettle(t, e, proxy, nil, lease.OpAck, after)
	reconnect(t, proxy, settles)
	if err := settles.Flush(); err != nil {
		t.Fatal(err)
	}
	if out := e.c.Settle(context.Background(), lease.OpAck, []token.Claims{after}, settle.Args{}); out[0].Err != nil {
		t.Fatalf("the retry of the Ack after the reset: %v; want it sent", out[0].Err)
	}
	natstest.Eventually(t, within, "the Ack applied", func() bool { return e.info().NumAckPending == 0 })
	if ci := e.info(); ci.AckFloor.Stream != after.StreamSeq {
		t.Fatalf("ack floor %d; want %d", ci.AckFloor.Stream, after.StreamSeq)
	}
}
