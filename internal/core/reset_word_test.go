package core

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/token"
)

// A replica that tells its peers of a reset returns only once each of them
// has answered (they answer after voiding their leases), so the delivery
// that showed the reset is handed out after no stale lease is left; a peer
// that does not answer holds it back resetWordWait at most, and the error
// says how many answered.
func TestTheWordOfAResetWaitsForEachPeersAnswer(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := New(ctx, Options{Conn: natstest.Connect(t, ns), Keys: token.RandomKeyring(), RequestTimeout: time.Second,
		Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing"}}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	const subject = wordPrefix + "ORDERS.billing"
	// Two peers; the test releases their answers one by one.
	release := make(chan struct{})
	heard := make(chan struct{}, 2)
	for range 2 {
		peer := natstest.Connect(t, ns)
		if _, err := peer.Subscribe(subject, func(m *nats.Msg) {
			heard <- struct{}{}
			<-release
			_ = m.Respond(nil)
		}); err != nil {
			t.Fatal(err)
		}
		if err := peer.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- r.tell(subject, []byte(r.ID().String()+" r1"), 2) }()
	<-heard
	<-heard
	release <- struct{}{}
	select {
	case err := <-done:
		t.Fatalf("the word returned (%v) with one of two peers answered", err)
	default:
	}
	release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatalf("both peers answered: %v", err)
	}

	// A peer counted that never answers: the word gives up and says so.
	start := time.Now()
	go func() { done <- r.tell(subject, []byte(r.ID().String()+" r2"), 3) }()
	for range 2 {
		<-heard
		release <- struct{}{}
	}
	err = <-done
	if err == nil || !strings.Contains(err.Error(), "2 of 3 other replicas answered") {
		t.Fatalf("a peer that never answers: %v; want 2 of 3 answered", err)
	}
	if waited := time.Since(start); waited < resetWordWait {
		t.Fatalf("gave up after %v; want resetWordWait (%v)", waited, resetWordWait)
	}
}
