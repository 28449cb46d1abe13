package consumer_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// A replica's share of the consumer's max_waiting: one that served alone
// keeps its places down to its even share when another joins; one that
// joins others starts from what the server has free, never past its share.
func TestSetReplicasSharesMaxWaiting(t *testing.T) {
	cfg := consumer.Config{AckWait: 30 * time.Second, MaxAckPending: 1024}
	e := start(t, cfg)
	places := e.info().Config.MaxWaiting
	allowed := func(c *consumer.Consumer) int {
		_, limit, _ := c.Pulls()
		return limit
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()

	e.c.SetReplicas(1)
	if a := allowed(e.c); a != places-1 {
		t.Fatalf("alone: %d places, want max_waiting-1 = %d", a, places-1)
	}

	// Clients outside jetgate hold 400 places.
	const held = 400
	e.holdPlaces(held)

	e.c.SetReplicas(2)
	if a, want := allowed(e.c), (places-1)/2; a != want {
		t.Fatalf("a second replica joined: %d places, want the even share %d", a, want)
	}
	e.c.SetReplicas(1)
	if a, want := allowed(e.c), (places-1)/2; a != want {
		t.Fatalf("alone again with %d places held by others: %d places, want %d (no more than the server has free)", held, a, want)
	}

	// A replica joining: from nothing, as far as the server has room.
	gjs, err := jetstream.New(natstest.Connect(t, e.ns))
	if err != nil {
		t.Fatal(err)
	}
	sender, err := settle.NewSender(e.nc, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close()
	joiner, err := consumer.Bind(ctx, gjs, consumer.Config{Stream: stream, Name: name, AckWait: cfg.AckWait, MaxAckPending: cfg.MaxAckPending},
		consumer.Deps{Conn: e.nc, Sender: sender, Keys: token.RandomKeyring(), Self: token.NewIssuerID(), Timeout: 2 * time.Second,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	joiner.SetReplicas(2)
	if a := allowed(joiner); a != 0 {
		t.Fatalf("joining: %d places before any caller asked, want none (nothing is asked of the server until a caller needs a place)", a)
	}
	// A caller that needs a place grows the share by what the server has
	// free.
	if _, err := joiner.Fetch(ctx, consumer.FetchRequest{Batch: 1}); err != nil {
		t.Fatal(err)
	}
	if a, want := allowed(joiner), places-1-held; a != want {
		t.Fatalf("joining: %d places, want the %d the server has free", a, want)
	}
}
