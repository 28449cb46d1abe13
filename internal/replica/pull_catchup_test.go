package replica

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
)

// A pull is sent once the relay has handled what it had received, as a
// settle is: a reset request the client holds but has not handed to the
// relay's handler yet would otherwise be noticed after the pull was sent,
// and the pull's deliveries, made after the reset, taken to be from before
// it and left unleased until ack_wait. Here a relay handler holds a
// message: a Fetch sends no pull and fails UNAVAILABLE after the request
// timeout, and the message stays with the server; once the handler lets go,
// a Fetch gets it.
func TestAPullWaitsForWhatTheRelayHasInHand(t *testing.T) {
	r, nc, ctx := billingReplica(t, 300*time.Millisecond)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "orders.1", []byte("one")); err != nil {
		t.Fatal(err)
	}
	release, _ := holdInRelay(t, r, nc)
	if _, err := r.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: 2 * time.Second}); !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("a Fetch while the relay holds a message: %v; want UNAVAILABLE after the request timeout", err)
	}
	info, err := js.Consumer(ctx, "ORDERS", "billing")
	if err != nil {
		t.Fatal(err)
	}
	if ci := info.CachedInfo(); ci.Delivered.Consumer != 0 || ci.NumPending != 1 {
		t.Fatalf("a pull went while the relay held a message: delivered %d, pending %d; want 0 and 1", ci.Delivered.Consumer, ci.NumPending)
	}
	release()
	res, err := r.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: 2 * time.Second})
	if err != nil || len(res.Messages) != 1 || string(res.Messages[0].Data) != "one" {
		t.Fatalf("a Fetch once the handler let go: %v %v; want the message", res.Messages, err)
	}
}
