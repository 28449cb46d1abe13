package consumer

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/token"
)

// The word of a reset is "<sender> <reset id>" on the consumer's word
// subject, a request when the sender counts peers: it returns only once
// each of them has answered (they answer after voiding their leases), so
// the delivery that showed the reset is handed out after no stale lease is
// left; a peer that does not answer holds it back resetWordWait at most,
// and the error says how many answered. Alone, it is published and waits
// for nothing.
func TestTheWordOfAResetWaitsForEachPeersAnswer(t *testing.T) {
	ns := natstest.Start(t)
	s := &onServer{stream: "ORDERS", name: "billing", nc: natstest.Connect(t, ns), self: token.NewIssuerID()}
	const subject = ResetWordPrefix + "ORDERS.billing"
	// Two peers; the test releases their answers one by one.
	release := make(chan struct{})
	heard := make(chan *nats.Msg, 4)
	for range 2 {
		peer := natstest.Connect(t, ns)
		if _, err := peer.Subscribe(subject, func(m *nats.Msg) {
			heard <- m
			if m.Reply != "" {
				<-release
				_ = m.Respond(nil)
			}
		}); err != nil {
			t.Fatal(err)
		}
		if err := peer.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- s.say("r1", 2) }()
	for range 2 {
		if m := <-heard; string(m.Data) != s.self.String()+" r1" || m.Reply == "" {
			t.Fatalf("a peer heard %q (reply %q); want %q as a request", m.Data, m.Reply, s.self.String()+" r1")
		}
	}
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
	go func() { done <- s.say("r2", 3) }()
	for range 2 {
		<-heard
		release <- struct{}{}
	}
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "2 of 3 other replicas answered") {
		t.Fatalf("a peer that never answers: %v; want 2 of 3 answered", err)
	}
	if waited := time.Since(start); waited < resetWordWait {
		t.Fatalf("gave up after %v; want resetWordWait (%v)", waited, resetWordWait)
	}

	// Alone: published, not a request, and nothing waited for.
	if err := s.say("r3", 0); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if m := <-heard; string(m.Data) != s.self.String()+" r3" || m.Reply != "" {
			t.Fatalf("alone, a peer heard %q (reply %q); want %q published", m.Data, m.Reply, s.self.String()+" r3")
		}
	}
}
