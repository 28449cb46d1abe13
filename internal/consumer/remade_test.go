package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// A replica that missed a deletion and noticed the consumer made again only
// from a later info tells no peer, and records nothing in the ledger: a
// record of its late notice had every replica refuse the tokens of the new
// consumer issued before it (Z adopting X's), each a delivery more.
func TestALateNoticeOfARemadeConsumerIsNotRecorded(t *testing.T) {
	cfg := consumer.Config{AckWait: 30 * time.Second, MaxAckPending: 1024}
	x := startLedgered(t, cfg) // X: hears the delete advisory
	own := natstest.Connect(t, x.ns)
	y := bindTelling(t, x.ns, own, cfg, nil, 2*time.Second, nil, withLedger) // Y: misses it
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()

	x.publish("orders.new", "a")
	// An operator deletes the consumer and makes it again (nats consumer rm
	// + add).
	if err := x.js.DeleteConsumer(ctx, stream, name); err != nil {
		t.Fatal(err)
	}
	if _, err := x.js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	x.c.Deleted() // X's relay heard the advisory

	// X leases the new consumer's first delivery.
	res := x.fetch(consumer.FetchRequest{Batch: 1, Expires: 2 * time.Second})
	if len(res.Messages) != 1 || res.Messages[0].Meta.Delivered != 1 {
		t.Fatalf("X fetched %d messages of the consumer made again", len(res.Messages))
	}
	cl, err := x.keys.Open(res.Messages[0].Token, stream, name, "")
	if err != nil {
		t.Fatal(err)
	}

	// Y asks an info (a caller waits on it): it learns the consumer was made
	// again, voids its own leases and, tells no peer.
	if _, err := y.c.Info(ctx); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(own)
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := settle.OpenLedger(ctx, js, 1)
	if err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, within, "X's deletion recorded", func() bool {
		at, err := ledger.LastReset(ctx, stream, name)
		return err == nil && !at.IsZero()
	})
	if at, err := ledger.LastReset(ctx, stream, name); err != nil || at.After(cl.Start) {
		t.Fatalf("the last reset recorded %v (%v) is after X's token started (%v): Y's late notice was recorded", at, err, cl.Start)
	}

	// X goes away; Z, started since, settles X's token alone.
	z := bindTelling(t, x.ns, own, cfg, nil, 2*time.Second, nil, withLedger)
	if out := z.c.Adopt(ctx, lease.OpAck, []token.Claims{cl}, settle.Args{}); out[0].Err != nil {
		t.Fatalf("Z adopting X's token of the consumer made again: %v; want it acked (no reset since it was issued, and the peers were deliberately not told)", out[0].Err)
	}
}
