package settle_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/settle"
)

// sendInOrder is send for SendInOrder.
func sendInOrder(t *testing.T, s *settle.Sender, subjects []string) []error {
	t.Helper()
	done := make(chan []error, 1)
	go func() { done <- s.SendInOrder(context.Background(), subjects, []byte("+ACK")) }()
	select {
	case res := <-done:
		if len(res) != len(subjects) {
			t.Fatalf("SendInOrder returned %d errors for %d subjects", len(res), len(subjects))
		}
		return res
	case <-time.After(30 * time.Second):
		t.Fatal("SendInOrder did not return within 30s")
		return nil
	}
}

// A batch in order asks one reply, of its last settle, and that reply
// comes only once the server has applied every settle of the batch.
func TestSendInOrderConfirmsTheBatchWithOneReply(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	cons, acks := deliveries(t, nc, 5)
	var (
		mu   sync.Mutex
		seen []*nats.Msg
	)
	subscribe(t, natstest.Connect(t, ns), "$JS.ACK.ORDERS.billing.>", func(m *nats.Msg) {
		mu.Lock()
		seen = append(seen, m)
		mu.Unlock()
	})
	s := newSender(t, nc, 5*time.Second)
	for i, err := range sendInOrder(t, s, acks) {
		if err != nil {
			t.Errorf("settle %d: %v", i, err)
		}
	}
	// Asked at once: the reply to the last came after the server applied
	// the others.
	if ci := consumerInfo(t, cons); ci.NumAckPending != 0 || ci.AckFloor.Stream != 5 {
		t.Errorf("after: %d ack pending, ack floor %d; want 0 and 5", ci.NumAckPending, ci.AckFloor.Stream)
	}
	natstest.Eventually(t, 5*time.Second, "the watcher sees every settle", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == len(acks)
	})
	mu.Lock()
	defer mu.Unlock()
	for i, m := range seen {
		if asked := m.Reply != ""; asked != (i == len(seen)-1) || m.Subject != acks[i] {
			t.Errorf("settle %d on %s asked a reply: %v; want only the last, in order", i, m.Subject, asked)
		}
	}
}

// Whatever befalls the settle that confirms a batch befalls the batch: the
// ones before it are never reported done without it.
func TestSendInOrderOutcomesFollowTheLast(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	subscribe(t, nc, "silent.>", func(*nats.Msg) {})
	subscribeRefusing(t, nc, "refuse.>")
	s := newSender(t, nc, 300*time.Millisecond)

	t.Run("unanswered", func(t *testing.T) {
		for i, err := range sendInOrder(t, s, []string{"x.1", "x.2", "silent.0"}) {
			if !errors.Is(err, settle.ErrUnconfirmed) {
				t.Errorf("settle %d: %v, want ErrUnconfirmed", i, err)
			}
		}
	})
	t.Run("no responders", func(t *testing.T) {
		for i, err := range sendInOrder(t, s, []string{"x.1", "nobody.home"}) {
			if !errors.Is(err, settle.ErrNoResponders) {
				t.Errorf("settle %d: %v, want ErrNoResponders", i, err)
			}
		}
	})
	t.Run("answered with a status", func(t *testing.T) {
		res := sendInOrder(t, s, []string{"x.1", "refuse.0"})
		if !errors.Is(res[0], settle.ErrUnconfirmed) {
			t.Errorf("settle before the last: %v, want ErrUnconfirmed", res[0])
		}
		if !errors.Is(res[1], errs.ErrUnavailable) || errors.Is(res[1], settle.ErrUnconfirmed) {
			t.Errorf("the last: %v, want ErrUnavailable only", res[1])
		}
	})
	t.Run("not connected", func(t *testing.T) {
		closed := natstest.Connect(t, ns)
		cs := newSender(t, closed, time.Second)
		closed.Close()
		for i, err := range sendInOrder(t, cs, []string{"x.1", "x.2"}) {
			if !errors.Is(err, errs.ErrUnavailable) || errors.Is(err, settle.ErrUnconfirmed) {
				t.Errorf("settle %d: %v, want ErrUnavailable (not sent)", i, err)
			}
		}
	})
}

// A connection re-established while a batch was out may have lost what it
// sent before: only the last, whose reply came, may be confirmed. A reply
// to what it sent mostly goes to the dropped connection, and the sender
// stops waiting as the connection drops; this one comes after the
// reconnect, and races the sender's noticing.
func TestSendInOrderAcrossAReconnectConfirmsAtMostTheLast(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns, nats.MaxReconnects(-1), nats.ReconnectWait(10*time.Millisecond))
	s := newSender(t, nc, 10*time.Second)
	before := nc.Stats().Reconnects
	// The responder makes the sender's connection reconnect before it
	// answers, as a broken connection would between two settles.
	answered := make(chan struct{})
	subscribe(t, natstest.Connect(t, ns), "confirm.>", func(m *nats.Msg) {
		_ = nc.ForceReconnect()
		go func() {
			defer close(answered)
			natstest.Eventually(t, 10*time.Second, "the sender reconnected", func() bool {
				return nc.Stats().Reconnects > before && nc.IsConnected()
			})
			_ = nc.Flush() // its reply subscription is back on the server
			_ = m.Respond(nil)
		}()
	})
	res := sendInOrder(t, s, []string{"x.1", "x.2", "confirm.0"})
	for i, err := range res[:2] {
		if !errors.Is(err, settle.ErrUnconfirmed) {
			t.Errorf("settle %d: %v, want ErrUnconfirmed", i, err)
		}
	}
	if res[2] != nil && !errors.Is(res[2], settle.ErrUnconfirmed) {
		t.Errorf("the last: %v, want confirmed or ErrUnconfirmed", res[2])
	}
	<-answered
}
