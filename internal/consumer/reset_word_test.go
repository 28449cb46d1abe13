package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/token"
)

// wordSubject is where the replicas of ORDERS/billing say their words of
// resets.
const wordSubject = consumer.ResetWordPrefix + stream + "." + name

// hearWords routes the words of resets on the consumer's subject to it, as
// a replica does for each consumer it serves.
func (e *env) hearWords() {
	e.t.Helper()
	sub, err := e.nc.Subscribe(wordSubject, e.c.HearResetWord)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := e.nc.Flush(); err != nil {
		e.t.Fatal(err)
	}
}

// A replica hears its own word of a reset on the subject its peers hear it:
// it neither voids again nor answers it as a peer's (the sender would count
// itself among its peers). A peer's word voids the leases it holds and is
// answered once they are void; the same word again is answered and voids
// nothing more.
func TestAReplicaAnswersItsPeersWordsNotItsOwn(t *testing.T) {
	e := start(t, consumer.Config{AckWait: time.Minute})
	e.hearWords()
	e.publish("orders.1", "a")
	if res := e.fetch(consumer.FetchRequest{Batch: 1, Expires: time.Second}); len(res.Messages) != 1 {
		t.Fatalf("fetch: %d messages, want 1", len(res.Messages))
	}
	peer := natstest.Connect(t, e.ns)
	own, err := peer.SubscribeSync(nats.NewInbox())
	if err != nil {
		t.Fatal(err)
	}
	other, err := peer.SubscribeSync(nats.NewInbox())
	if err != nil {
		t.Fatal(err)
	}
	if err := peer.PublishRequest(wordSubject, own.Subject, []byte(e.self.String()+" r1")); err != nil {
		t.Fatal(err)
	}
	peerID := token.NewIssuerID().String()
	if err := peer.PublishRequest(wordSubject, other.Subject, []byte(peerID+" r2")); err != nil {
		t.Fatal(err)
	}
	// Heard in the order sent, and answered on one connection in that
	// order: once the peer's word is answered, an answer to the own word
	// would be here already.
	if _, err := other.NextMsg(within); err != nil {
		t.Fatalf("a peer's word was not answered: %v", err)
	}
	if n, _, _ := own.Pending(); n != 0 {
		t.Fatal("the replica answered its own word as a peer's")
	}
	if n := e.c.Leases(); n != 0 {
		t.Fatalf("%d leases live after a peer's word, want none", n)
	}
	if n := e.c.Counts().Resets.Load(); n != 1 {
		t.Fatalf("%d resets noticed; want 1, the peer's (the own word voids nothing)", n)
	}
	if _, err := peer.Request(wordSubject, []byte(peerID+" r2"), within); err != nil {
		t.Fatalf("the same word again was not answered: %v", err)
	}
	if n := e.c.Counts().Resets.Load(); n != 1 {
		t.Fatalf("%d resets noticed after the same word twice; want 1", n)
	}
}

// With no OnReset the consumer says the word itself, as a request: alone,
// for a peer that may just have joined, and waiting for no answer; with
// peers, the consumer's new deliveries wait until each peer answered.
func TestTheConsumerSaysTheWordItselfAndHoldsDeliveriesUntilAnswered(t *testing.T) {
	e := start(t, consumer.Config{AckWait: time.Minute})
	peer := natstest.Connect(t, e.ns)
	heard := make(chan *nats.Msg, 4)
	if _, err := peer.Subscribe(wordSubject, func(m *nats.Msg) { heard <- m }); err != nil {
		t.Fatal(err)
	}
	if err := peer.Flush(); err != nil {
		t.Fatal(err)
	}
	next := func(what string) *nats.Msg {
		t.Helper()
		select {
		case m := <-heard:
			return m
		case <-time.After(within):
			t.Fatalf("%s: no word heard", what)
			return nil
		}
	}
	e.c.ResetRequested("r1")
	if m := next("alone"); string(m.Data) != e.self.String()+" r1" || m.Reply == "" {
		t.Fatalf("alone: heard %q (reply %q); want %q as a request", m.Data, m.Reply, e.self.String()+" r1")
	}
	// Alone, nothing waits for the answer the peer does not give.
	e.publish("orders.0", "z")
	if res := e.fetch(consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second}); len(res.Messages) != 1 {
		t.Fatalf("alone, after the word: fetched %d; want 1", len(res.Messages))
	}

	e.setPeers("p1")
	e.publish("orders.1", "a")
	e.c.ResetRequested("r2")
	word := next("one of two")
	if string(word.Data) != e.self.String()+" r2" || word.Reply == "" {
		t.Fatalf("one of two: heard %q (reply %q); want %q as a request", word.Data, word.Reply, e.self.String()+" r2")
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	done := e.fetchInBackground(ctx, consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second})
	natstest.Eventually(t, within, "the message delivered to the held Fetch", func() bool {
		return e.info().NumAckPending == 2 // and the one fetched alone
	})
	select {
	case f := <-done:
		t.Fatalf("the Fetch returned (%d messages, %v) before the peer answered the word", len(f.res.Messages), f.err)
	default:
	}
	if err := word.Respond([]byte("p1")); err != nil {
		t.Fatal(err)
	}
	if f := <-done; f.err != nil || len(f.res.Messages) != 1 {
		t.Fatalf("after the answer: %d messages, %v; want the one held", len(f.res.Messages), f.err)
	}
}

// fetched is the outcome of a Fetch run in the background.
type fetched struct {
	res consumer.FetchResult
	err error
}

// fetchInBackground runs a Fetch on a goroutine of its own and tells its
// outcome.
func (e *env) fetchInBackground(ctx context.Context, req consumer.FetchRequest) <-chan fetched {
	done := make(chan fetched, 1)
	go func() {
		res, err := e.c.Fetch(ctx, req)
		done <- fetched{res, err}
	}()
	return done
}
