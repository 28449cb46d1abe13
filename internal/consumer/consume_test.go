package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// consumeInto runs a Consume until the end of the test, handing each
// response it sends to sent (with the number of pulls waiting on the server
// at that moment, when waiting is set), and returns its end.
func consumeInto(t *testing.T, e *env, req consumer.ConsumeRequest, sent chan<- []*consumer.Delivery, waiting chan<- int) <-chan error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		ended <- e.c.Consume(ctx, req, func(ds []*consumer.Delivery) error {
			if len(ds) == 0 {
				return nil // a heartbeat
			}
			if waiting != nil {
				waiting <- e.info().NumWaiting
			}
			sent <- ds
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-finished
	})
	return ended
}

// A Consume stream whose consumer is at max_ack_pending sends each message a
// settle lets through while the pull that brought it is still open: it does
// not hold what it has until the pull ends (at its heartbeat or expiry).
// Held, a stream would wait out a pull per message at max_ack_pending, and
// sixteen streams went from 70,000 to 2,000 messages a second.
func TestConsumeAtMaxAckPendingSendsAsSettlesMakeRoom(t *testing.T) {
	restore := consumer.SetConsumeMaxWait(time.Minute)
	t.Cleanup(restore)
	e := start(t, consumer.Config{AckWait: time.Minute, MaxAckPending: 4})
	for i := range 8 {
		e.publish(fmt.Sprintf("orders.%d", i), "m")
	}
	sent := make(chan []*consumer.Delivery, 16)
	waiting := make(chan int, 16)
	consumeInto(t, e, consumer.ConsumeRequest{MaxMessages: 8, Heartbeat: time.Hour}, sent, waiting)

	var held []*consumer.Delivery
	for len(held) < 4 {
		held = append(held, receiveBatch(t, sent, "the first four messages")...)
		<-waiting
	}
	if len(held) != 4 {
		t.Fatalf("the stream got %d messages, want the consumer's max_ack_pending, 4", len(held))
	}
	natstest.Eventually(t, within, "the stream's next pull waiting on the server", func() bool {
		return e.info().NumWaiting == 1
	})
	e.ack(held[0])
	next := receiveBatch(t, sent, "the message the settle let through")
	if n := <-waiting; n != 1 {
		t.Fatalf("the stream sent the message a settle let through after the pull that brought it ended (%d pulls waiting)", n)
	}
	if len(next) != 1 {
		t.Fatalf("a settle let %d messages through, want 1", len(next))
	}
}

// A Consume stream holding nothing whose max_bytes is smaller than the next
// message ends with MESSAGE_TOO_LARGE, rather than pulling again and again;
// the message stays with the server for a stream that can take it.
func TestConsumeEndsWhenTheNextMessageCanNeverFit(t *testing.T) {
	e := start(t, consumer.Config{AckWait: time.Minute, MaxAckPending: 100})
	e.publish("orders.big", string(make([]byte, 2048)))
	// The consumer counts a message a moment after its publish is
	// acknowledged, and may refuse a pull for it before: the check of what
	// stayed with the server below must not race that count.
	natstest.Eventually(t, within, "the consumer counts the message", func() bool { return e.info().NumPending == 1 })
	sent := make(chan []*consumer.Delivery, 16)
	ended := consumeInto(t, e, consumer.ConsumeRequest{MaxMessages: 10, MaxBytes: 1024, Heartbeat: time.Hour}, sent, nil)
	select {
	case err := <-ended:
		if !errors.Is(err, errs.ErrMessageTooLarge) {
			t.Fatalf("the stream ended with %v, want %v", err, errs.ErrMessageTooLarge)
		}
	case ds := <-sent:
		t.Fatalf("the stream sent %d messages larger than its max_bytes", len(ds))
	case <-time.After(within):
		t.Fatal("the stream neither sent nor ended")
	}
	if ci := e.info(); ci.NumAckPending != 0 || ci.NumPending != 1 {
		t.Fatalf("the message left the server: %d pending, %d ack pending; want 1, 0", ci.NumPending, ci.NumAckPending)
	}
}

func receiveBatch(t *testing.T, sent <-chan []*consumer.Delivery, what string) []*consumer.Delivery {
	t.Helper()
	select {
	case ds := <-sent:
		return ds
	case <-time.After(within):
		t.Fatalf("no %s within %v", what, within)
		return nil
	}
}

// ack acks a delivery the Consumer leased.
func (e *env) ack(d *consumer.Delivery) {
	e.t.Helper()
	cl, err := e.keys.Open(d.Token, stream, name, "")
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if o := e.c.Settle(ctx, lease.OpAck, []token.Claims{cl}, settle.Args{})[0]; o.Err != nil {
		e.t.Fatalf("ack: %v", o.Err)
	}
}
