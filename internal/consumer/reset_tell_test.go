package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
)

// word is one call of a Consumer's OnReset: the reset's id and how many
// peers it was told to wait for.
type word struct {
	id    string
	peers int
}

// tellingEnv binds ORDERS/billing with an OnReset that records each word
// (and waits for nothing), runs it until the end of the test, and returns
// it with the words.
//
// ORDERS is held in memory: after a reset to the stream's first message, a
// consumer's file store (nats-server 2.15.2) holds no delivered count of
// its own and answers the one its state file has, which its flusher may
// have written from before the reset (the reset's own write is skipped, or
// overwritten, while a flush is under way), until the next delivery; a
// memory store answers the reset's count, 0, as this file's infos need.
func tellingEnv(t *testing.T, cfg consumer.Config) (*env, <-chan word) {
	t.Helper()
	ns := natstest.Start(t)
	own := natstest.Connect(t, ns)
	js, err := jetstream.New(own)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{"orders.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	words := make(chan word, 16)
	e := bindTelling(t, ns, own, cfg, nil, 2*time.Second, func(id string, peers int) { words <- word{id, peers} }, 0)
	return e, words
}

// nextWord is the next word told, or a failure after within.
func nextWord(t *testing.T, words <-chan word, what string) word {
	t.Helper()
	select {
	case w := <-words:
		return w
	case <-time.After(within):
		t.Fatalf("%s: the peers were never told", what)
		return word{}
	}
}

// A reset that only an info shows (no delivery came after it, no request
// was seen) voids the leases here and is told to the peers too: another
// replica may hold a lease from before it.
func TestAResetAnInfoShowsIsToldToThePeers(t *testing.T) {
	e, words := tellingEnv(t, consumer.Config{AckWait: time.Minute})
	for range 3 {
		e.publish("orders.1", "m")
	}
	if res := e.fetch(consumer.FetchRequest{Batch: 3, Expires: 5 * time.Second}); len(res.Messages) != 3 {
		t.Fatalf("fetch: %d messages, want 3", len(res.Messages))
	}
	if _, err := e.nc.Request("$JS.API.CONSUMER.RESET."+stream+"."+name, nil, within); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	ci, err := e.c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ci.Delivered.Consumer != 0 {
		t.Fatalf("the info counts %d delivered after the reset, want 0", ci.Delivered.Consumer)
	}
	if n := e.c.Leases(); n != 0 {
		t.Fatalf("%d leases live after an info showed the reset, want none", n)
	}
	if w := nextWord(t, words, "a reset an info showed"); w.id == "" {
		t.Fatal("the word of the reset carries no id")
	}
}

// The word of a reset waits for the peers that serve the consumer, those
// the roster names besides this replica, and for no other: a replica
// alone waits for none.
func TestTheWordOfAResetWaitsForThePeersThatServe(t *testing.T) {
	e, words := tellingEnv(t, consumer.Config{AckWait: time.Minute})
	e.c.ResetRequested("r1")
	if w := nextWord(t, words, "alone"); w != (word{"r1", 0}) {
		t.Fatalf("alone: told %+v, want r1 to no peer", w)
	}
	e.setPeers("p1", "p2")
	e.c.ResetRequested("r2")
	if w := nextWord(t, words, "one of three"); w != (word{"r2", 2}) {
		t.Fatalf("one of three replicas: told %+v, want r2 to 2 peers", w)
	}
}
