package consumer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// quietFor is how long a test watches for an answer that must not come
// while the server's answer to a settle is held back: a replica that
// answered at once would have answered well within it.
const quietFor = 300 * time.Millisecond

// heldAck fetches one message of e and acks it on the Consumer with the
// server's confirmation held back: once it returns, the ack is applied on
// the server and the settle is in flight. done tells its outcome once the
// confirmation is let through.
func heldAck(t *testing.T, e *env, replies *holdBack) (done <-chan settle.Outcome) {
	t.Helper()
	e.publish("orders.1", "a")
	res := e.fetch(consumer.FetchRequest{Batch: 1, Expires: time.Second})
	if len(res.Messages) != 1 {
		t.Fatalf("fetch: %d messages, want 1", len(res.Messages))
	}
	cl, err := e.keys.Open(res.Messages[0].Token, stream, name, "")
	if err != nil {
		t.Fatal(err)
	}
	replies.hold()
	out := make(chan settle.Outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		out <- e.c.Settle(ctx, lease.OpAck, []token.Claims{cl}, settle.Args{})[0]
	}()
	natstest.Eventually(t, within, "the ack applied on the server", func() bool { return e.info().NumAckPending == 0 })
	return out
}

// A settle begun just before a peer's word voided the leases is published
// after the void, and the peer hands the reset's deliveries out once
// answered: the replica answers only once the server has answered every
// settle begun before the void, so that none reaches the server after the
// peer handed out a delivery it would land on. Here the server's answer to
// an Ack is held back while a peer's word comes.
func TestAReplicaAnswersAWordOnceTheSettlesBegunBeforeAreAnswered(t *testing.T) {
	defer consumer.SetDrainWait(within)()
	e, replies := startHeld(t, consumer.Config{AckWait: time.Minute})
	e.hearWords()
	acked := heldAck(t, e, replies)

	peer := natstest.Connect(t, e.ns)
	answer, err := peer.SubscribeSync(nats.NewInbox())
	if err != nil {
		t.Fatal(err)
	}
	if err := peer.PublishRequest(wordSubject, answer.Subject, []byte(token.NewIssuerID().String()+" r1")); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, within, "the word's void", func() bool { return e.c.Counts().Resets.Load() == 1 })
	if m, err := answer.NextMsg(quietFor); err == nil {
		t.Fatalf("the word was answered (%q) while an Ack begun before its void awaited the server", m.Data)
	}
	replies.release()
	if o := <-acked; o.Err != nil {
		t.Fatalf("the Ack begun before the void: %v; want it confirmed", o.Err)
	}
	if _, err := answer.NextMsg(within); err != nil {
		t.Fatalf("the word was not answered once the Ack was: %v", err)
	}
}

// The replica that notices a reset holds the consumer's new deliveries back
// until its own settles begun before the void are answered too, as its
// peers' answers wait for theirs.
func TestATellerHoldsDeliveriesUntilItsOwnSettlesAreAnswered(t *testing.T) {
	defer consumer.SetDrainWait(within)()
	e, replies := startHeld(t, consumer.Config{AckWait: time.Minute})
	acked := heldAck(t, e, replies)

	e.c.ResetRequested("r1")
	heldUntilAnswered(t, e, replies, acked)
}

// A replica that hears of a reset first through a peer's word holds the
// consumer's new deliveries back too, until the settles it began before
// the void are answered: a delivery made after the reset, pulled here
// meanwhile, would otherwise be handed out with such a settle still on its
// way to land on it.
func TestAReplicaToldOfAResetHoldsDeliveriesUntilItsSettlesAreAnswered(t *testing.T) {
	defer consumer.SetDrainWait(within)()
	e, replies := startHeld(t, consumer.Config{AckWait: time.Minute})
	e.hearWords()
	acked := heldAck(t, e, replies)

	peer := natstest.Connect(t, e.ns)
	if err := peer.Publish(wordSubject, []byte(token.NewIssuerID().String()+" r1")); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, within, "the word's void", func() bool { return e.c.Counts().Resets.Load() == 1 })
	heldUntilAnswered(t, e, replies, acked)
}

// heldUntilAnswered checks that, after a reset's void, a message published
// and delivered to a Fetch is not handed out while the Ack begun before
// the void (acked, heldAck's) awaits the server, and is once it is
// answered.
func heldUntilAnswered(t *testing.T, e *env, replies *holdBack, acked <-chan settle.Outcome) {
	t.Helper()
	e.publish("orders.2", "b")
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	done := e.fetchInBackground(ctx, consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second})
	natstest.Eventually(t, within, "the message delivered to the held Fetch", func() bool { return e.info().NumAckPending == 1 })
	select {
	case f := <-done:
		t.Fatalf("the Fetch returned (%d messages, %v) while an Ack begun before the void awaited the server", len(f.res.Messages), f.err)
	case <-time.After(quietFor):
	}
	replies.release()
	if o := <-acked; o.Err != nil {
		t.Fatalf("the Ack begun before the void: %v; want it confirmed", o.Err)
	}
	if f := <-done; f.err != nil || len(f.res.Messages) != 1 {
		t.Fatalf("once the Ack was answered: %d messages, %v; want the one held", len(f.res.Messages), f.err)
	}
}

// A settle is checked once more just before it is sent: a reset noticed
// since its leases were begun (while a Nak consulted the ledger, say, or
// while the process was stopped, which Deps.Awake catches up with) voided
// them, so nothing is sent and each is LEASE_EXPIRED; and when the replica
// cannot catch up, the settle fails as that does and the lease is live
// again, for a retry.
func TestASettleIsNotSentWhenAResetVoidedItsLeasesSinceItBegan(t *testing.T) {
	e := start(t, consumer.Config{AckWait: time.Minute})
	e.publish("orders.1", "a")
	res := e.fetch(consumer.FetchRequest{Batch: 1, Expires: time.Second})
	if len(res.Messages) != 1 {
		t.Fatalf("fetch: %d messages, want 1", len(res.Messages))
	}
	d := res.Messages[0]

	e.setAwake(func(context.Context) error { return errs.ErrUnavailable })
	if err := e.settleOne(lease.OpAck, d); !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("an Ack while the replica cannot catch up: %v; want UNAVAILABLE", err)
	}
	if n := e.c.Leases(); n != 1 {
		t.Fatalf("%d leases live after an Ack that could not be sent; want 1, for a retry", n)
	}
	e.setAwake(func(context.Context) error {
		e.c.ResetRequested("r1") // as a reset slept through is read on waking
		return nil
	})
	if err := e.settleOne(lease.OpAck, d); !errors.Is(err, errs.ErrLeaseExpired) {
		t.Fatalf("an Ack whose lease a reset voided before it was sent: %v; want LEASE_EXPIRED", err)
	}
	if n := e.info().NumAckPending; n != 1 {
		t.Fatalf("the server has %d deliveries awaiting an ack; want 1: the voided Ack was sent", n)
	}
}

// A settle begun before a reset's void that the server leaves unanswered
// (it answers no ack above its next delivery) waits no longer than the
// drain that gave up on it: it is LEASE_EXPIRED, its lease void, rather
// than UNAVAILABLE once its request timeout passed. Here the server's
// answer is held past the drain.
func TestASettleTheServerLeftUnansweredAfterAResetIsLeaseExpired(t *testing.T) {
	defer consumer.SetDrainWait(100 * time.Millisecond)()
	e, replies := startHeld(t, consumer.Config{AckWait: time.Minute}) // the sender waits `within` for an answer
	acked := heldAck(t, e, replies)

	e.c.ResetRequested("r1")
	if o := <-acked; !errors.Is(o.Err, errs.ErrLeaseExpired) {
		t.Fatalf("an Ack begun before a reset, left unanswered past the drain: %v; want LEASE_EXPIRED", o.Err)
	}
	if n := e.c.Counts().DrainsGivenUp.Load(); n != 1 {
		t.Errorf("%d drains given up counted; want 1", n)
	}
	replies.release()
	if n := e.c.Leases(); n != 0 {
		t.Fatalf("%d leases live after the reset; want none", n)
	}
}

// A word of a reset this replica noticed already voids nothing, and its
// drain waits for the settles begun before that reset's void alone: a
// settle of a lease taken since (live) is neither waited for nor cut
// short, however long the server takes to answer it.
func TestAWordOfAResetNoticedAlreadyLeavesLaterSettlesAlone(t *testing.T) {
	defer consumer.SetDrainWait(100 * time.Millisecond)()
	e, replies := startHeld(t, consumer.Config{AckWait: time.Minute})
	e.hearWords()
	e.c.ResetRequested("r1")
	acked := heldAck(t, e, replies) // a lease taken after the reset

	peer := natstest.Connect(t, e.ns)
	if _, err := peer.Request(wordSubject, []byte(token.NewIssuerID().String()+" r1"), within); err != nil {
		t.Fatalf("the word of a reset noticed already was not answered while a later Ack awaited the server: %v", err)
	}
	if n := e.c.Counts().Resets.Load(); n != 1 {
		t.Fatalf("%d resets noticed; want 1 (the word names the same reset)", n)
	}
	select {
	case o := <-acked:
		t.Fatalf("the later Ack ended (%v) while the server's answer was held", o.Err)
	case <-time.After(quietFor): // past drainWait
	}
	replies.release()
	if o := <-acked; o.Err != nil {
		t.Fatalf("the later Ack: %v; want it confirmed", o.Err)
	}
	if n := e.c.Counts().DrainsGivenUp.Load(); n != 0 {
		t.Errorf("%d drains given up counted; want none (nothing was in flight before the void)", n)
	}
}
