package consumer

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/token"
)

// The word of a reset is "<sender> <reset id>" on the consumer's word
// subject, as a request: it returns only once each peer named has answered
// with its id (they answer after voiding their leases), so the delivery
// that showed the reset is handed out after no stale lease is left. An
// answer from a replica not named does not count; a peer named only on the
// second look, once the first answered, is waited for too; an answer with
// no id (an earlier version) stands for one peer; a peer that does not
// answer holds it back until ctx ends, and the error says how many
// answered. The word goes before the peers are named.
func TestTheWordOfAResetWaitsForEachPeerNamed(t *testing.T) {
	ns := natstest.Start(t)
	s := &onServer{stream: "ORDERS", name: "billing", nc: natstest.Connect(t, ns), self: token.NewIssuerID(), log: slog.New(slog.DiscardHandler)}
	const subject = ResetWordPrefix + "ORDERS.billing"
	var mu sync.Mutex
	answering := map[string][]byte{} // who answers, and with what
	answer := func(with map[string][]byte) {
		mu.Lock()
		answering = with
		mu.Unlock()
	}
	heard := make(chan string, 16)
	for _, id := range []string{"p1", "p2", "stranger", "old"} {
		peer := natstest.Connect(t, ns)
		if _, err := peer.Subscribe(subject, func(m *nats.Msg) {
			heard <- id
			mu.Lock()
			body, ok := answering[id]
			mu.Unlock()
			if ok && m.Reply != "" {
				_ = m.Respond(body)
			}
		}); err != nil {
			t.Fatal(err)
		}
		if err := peer.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	say := func(wait time.Duration, looks ...[]string) error {
		t.Helper()
		n := 0
		s.peers = func(context.Context) []string {
			look := looks[min(n, len(looks)-1)]
			n++
			return look
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		err := s.say(ctx, "r")
		for range 4 {
			<-heard
		}
		return err
	}
	short, long := 500*time.Millisecond, 10*time.Second

	answer(map[string][]byte{"p1": []byte("p1"), "p2": []byte("p2")})
	if err := say(long, []string{"p1", "p2"}); err != nil {
		t.Fatalf("both peers named answered: %v", err)
	}
	answer(map[string][]byte{"p1": []byte("p1"), "stranger": []byte("stranger")})
	if err := say(short, []string{"p1", "p2"}); err == nil || !strings.Contains(err.Error(), "1 of 2 other replicas answered") {
		t.Fatalf("p2 silent, a replica not named answering: %v; want 1 of 2 answered", err)
	}
	answer(map[string][]byte{"p1": []byte("p1")})
	if err := say(short, []string{"p1"}, []string{"p1", "p2"}); err == nil || !strings.Contains(err.Error(), "1 of 2 other replicas answered") {
		t.Fatalf("p2 named on the second look, silent: %v; want 1 of 2 answered", err)
	}
	answer(map[string][]byte{"p1": []byte("p1"), "p2": []byte("p2")})
	if err := say(long, []string{"p1"}, []string{"p1", "p2"}); err != nil {
		t.Fatalf("p2 named on the second look, answering: %v", err)
	}
	answer(map[string][]byte{"old": nil})
	if err := say(long, []string{"p1"}); err != nil {
		t.Fatalf("an answer with no id for the one peer named: %v", err)
	}

	// Alone: nothing waited for, and the word went before the peers were
	// named.
	answer(nil)
	named := false
	s.peers = func(context.Context) []string {
		select {
		case <-heard:
		case <-time.After(long):
			t.Error("the peers were named before the word was sent")
		}
		named = true
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	if err := s.say(ctx, "r"); err != nil || !named {
		t.Fatalf("alone: %v (named: %v)", err, named)
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
