package consumer_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// A settle of one delivery of a message must not take away the credit of a
// Consume stream that holds the next delivery of it. Here a Nak's
// confirmation is held back until its redelivery has reached a Consume stream
// with a credit of one, as happens when the orphan pool naks a message that
// an open stream's waiting pull takes at once. When that stream's delivery
// is acked, its credit must come back and the stream pull the next message.
func TestConsumeKeepsItsCreditWhenAnOlderDeliveryIsSettled(t *testing.T) {
	e, replies := startHeld(t, consumer.Config{AckWait: time.Minute, MaxAckPending: 1024})
	seq := e.publish("orders.1", "first")
	res := e.fetch(consumer.FetchRequest{Batch: 1})
	if len(res.Messages) != 1 {
		t.Fatalf("fetch: %d messages, want 1", len(res.Messages))
	}
	first, err := e.keys.Open(res.Messages[0].Token, stream, name, "")
	if err != nil {
		t.Fatal(err)
	}

	// A stream with a credit of one; the first delivery is the Fetch's, so
	// it waits with nothing.
	sent := make(chan *consumer.Delivery, 16)
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() {
		ended <- e.c.Consume(ctx, consumer.ConsumeRequest{MaxMessages: 1, Heartbeat: time.Hour},
			func(ds []*consumer.Delivery) error {
				for _, d := range ds {
					sent <- d
				}
				return nil
			})
	}()
	t.Cleanup(func() {
		cancel()
		<-ended
	})
	natstest.Eventually(t, within, "the stream's pull waiting on the server", func() bool {
		return e.info().NumWaiting == 1
	})

	// Nak the Fetch's delivery; hold its confirmation until the stream has
	// the redelivery.
	replies.hold()
	nakked := make(chan settle.Outcome, 1)
	go func() {
		sctx, scancel := context.WithTimeout(context.Background(), within)
		defer scancel()
		nakked <- e.c.Settle(sctx, lease.OpNak, []token.Claims{first}, settle.Args{})[0]
	}()
	second := receiveDelivery(t, sent, "the redelivery on the stream")
	replies.release()
	if o := <-nakked; o.Err != nil {
		t.Fatalf("nak of the first delivery: %v", o.Err)
	}
	if second.Meta.StreamSeq != seq || second.Meta.Delivered != first.Delivered+1 {
		t.Fatalf("stream sent seq %d delivery %d, want seq %d delivery %d",
			second.Meta.StreamSeq, second.Meta.Delivered, seq, first.Delivered+1)
	}

	// Ack the stream's delivery: its credit comes back, and the next message
	// goes to it.
	held, err := e.keys.Open(second.Token, stream, name, "")
	if err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithTimeout(context.Background(), within)
	defer scancel()
	if o := e.c.Settle(sctx, lease.OpAck, []token.Claims{held}, settle.Args{})[0]; o.Err != nil {
		t.Fatalf("ack of the stream's delivery: %v", o.Err)
	}
	next := e.publish("orders.2", "second")
	select {
	case d := <-sent:
		if d.Meta.StreamSeq != next {
			t.Fatalf("stream sent seq %d, want %d", d.Meta.StreamSeq, next)
		}
	case <-time.After(within):
		ci := e.info()
		t.Fatalf("the stream did not pull again after its lease was acked: server has %d pending, %d waiting pulls, %d acks pending",
			ci.NumPending, ci.NumWaiting, ci.NumAckPending)
	}
}

func receiveDelivery(t *testing.T, sent <-chan *consumer.Delivery, what string) *consumer.Delivery {
	t.Helper()
	select {
	case d := <-sent:
		return d
	case <-time.After(within):
		t.Fatalf("no %s within %v", what, within)
		return nil
	}
}

// startHeld is start with the Consumer's settles sent on a connection of
// their own, whose replies (the server's confirmations) the test can hold
// back while pulls go on as ever.
func startHeld(t *testing.T, cfg consumer.Config) (*env, *holdBack) {
	t.Helper()
	hb := &holdBack{}
	e := startWith(t, cfg, func(ns *natsserver.Server) *nats.Conn {
		return natstest.Connect(t, ns, nats.SetCustomDialer(hb))
	}, within)
	// Registered last: runs before the Consumer's Close, whose Naks need
	// their replies.
	t.Cleanup(hb.release)
	return e, hb
}

// holdBack dials connections whose reads it can hold: while held, what the
// server sends waits, read but not handed on, until it is released.
type holdBack struct {
	mu   sync.Mutex
	gate chan struct{} // while held, closed on release; nil otherwise
}

func (h *holdBack) Dial(network, address string) (net.Conn, error) {
	c, err := net.Dial(network, address)
	if err != nil {
		return nil, err
	}
	return &heldConn{Conn: c, h: h}, nil
}

func (h *holdBack) hold() {
	h.mu.Lock()
	h.gate = make(chan struct{})
	h.mu.Unlock()
}

// release lets held reads through; it does nothing when nothing is held.
func (h *holdBack) release() {
	h.mu.Lock()
	if h.gate != nil {
		close(h.gate)
		h.gate = nil
	}
	h.mu.Unlock()
}

type heldConn struct {
	net.Conn
	h *holdBack
}

// Read waits after reading, not before: the client's reader is always
// inside a Read, and what that one returns must wait too.
func (c *heldConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.h.mu.Lock()
	gate := c.h.gate
	c.h.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return n, err
}
