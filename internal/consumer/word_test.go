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
// for nothing. The word goes before the peers are counted.
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
	go func() { done <- s.say("r1", func() int { return 2 }) }()
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
	go func() { done <- s.say("r2", func() int { return 3 }) }()
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

	// Alone: nothing waited for. The word went before the count was taken.
	counted := false
	if err := s.say("r3", func() int {
		select {
		case <-heard:
		case <-time.After(10 * time.Second):
			t.Error("the peers were counted before the word was sent")
		}
		counted = true
		return 0
	}); err != nil || !counted {
		t.Fatalf("alone: %v (counted: %v)", err, counted)
	}
	if m := <-heard; string(m.Data) != s.self.String()+" r3" {
		t.Fatalf("alone, a peer heard %q; want %q", m.Data, s.self.String()+" r3")
	}
	for range 2 { // the answers nobody waits for
		release <- struct{}{}
	}
}

// Deliveries stay held while any hold is: a reset's word released does not
// end the hold of a consumer whose replica is not counted yet, and a hold
// released twice counts once.
func TestDeliveriesStayHeldWhileAnyHoldIs(t *testing.T) {
	h := newHoldBack()
	isOpen := func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		select {
		case <-h.open:
			return true
		default:
			return false
		}
	}
	if !isOpen() {
		t.Fatal("a new hold-back holds deliveries")
	}
	counted, word := h.hold(), h.hold()
	word()
	word()
	if isOpen() {
		t.Fatal("deliveries flow while one of two holds is not released (the other released twice)")
	}
	counted()
	if !isOpen() {
		t.Fatal("deliveries still held with every hold released")
	}
	again := h.hold()
	if isOpen() {
		t.Fatal("a hold after every other was released holds nothing")
	}
	again()
}
