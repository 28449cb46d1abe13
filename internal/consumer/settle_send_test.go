package consumer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// A settle that waits past its lease's deadline after it began (here for a
// catch-up with NATS, which holds it until the server has redelivered the
// message to another client) is LEASE_EXPIRED and sends nothing: sent, the
// Ack would land on the other holder's delivery.
func TestASettleThatWaitedPastItsDeadlineIsNotSent(t *testing.T) {
	e := start(t, consumer.Config{AckWait: time.Second, MaxAckPending: 1024})
	e.publish("orders.1", "one")
	res := e.fetch(consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second})
	if len(res.Messages) != 1 {
		t.Fatalf("fetch: %d messages", len(res.Messages))
	}
	cl := e.c.ClaimsOf(res.Messages[0])
	var other jetstream.Msg
	e.setAwake(func(context.Context) error {
		other = e.pullPlain(5 * time.Second) // the server's redelivery, after ack_wait
		return nil
	})
	out := e.c.Settle(context.Background(), lease.OpAck, []token.Claims{cl}, settle.Args{})
	e.setAwake(nil)
	if other == nil {
		t.Fatal("the server did not redeliver the message to the other client")
	}
	if !errors.Is(out[0].Err, errs.ErrLeaseExpired) {
		t.Errorf("the Ack that waited past its deadline: %v; want LEASE_EXPIRED", out[0].Err)
	}
	if n := e.info().NumAckPending; n != 1 {
		t.Errorf("%d messages await an ack on the server; want 1, the other client's: the stale Ack landed on it", n)
	}
	if err := other.Ack(); err != nil {
		t.Errorf("the other client's Ack: %v", err)
	}
}

// A Consume stream whose send waits for a caller that reads nothing (up to
// the stall guard's 30s on gRPC) still extends the leases it holds: none is
// redelivered meanwhile, and each is then settled.
func TestAStreamBlockedInItsSendStillExtendsItsLeases(t *testing.T) {
	const ackWait = 3 * time.Second
	e := start(t, consumer.Config{AckWait: ackWait, MaxAckPending: 1024})
	e.publish("orders.1", "first")
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	got := make(chan *consumer.Delivery, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = e.c.Consume(ctx, consumer.ConsumeRequest{MaxMessages: 10, Heartbeat: time.Hour, AutoExtend: true}, func(ds []*consumer.Delivery) error {
			for _, d := range ds {
				got <- d
			}
			if len(ds) > 0 && ds[0].Meta.StreamSeq == 2 {
				select { // the caller stops reading
				case <-release:
				case <-ctx.Done():
				}
			}
			return nil
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	next := func(what string) *consumer.Delivery {
		t.Helper()
		select {
		case d := <-got:
			return d
		case <-time.After(within):
			t.Fatalf("the stream sent no %s", what)
			return nil
		}
	}
	first := next("first message")
	e.publish("orders.2", "second")
	second := next("second message")
	// Over two ack_waits: a lease left to lapse would come to this client.
	if m := e.pullPlain(2*ackWait + time.Second); m != nil {
		md, _ := m.Metadata()
		t.Fatalf("stream sequence %d was redelivered while the stream's send waited", md.Sequence.Stream)
	}
	close(release)
	cs := []token.Claims{e.c.ClaimsOf(first), e.c.ClaimsOf(second)}
	for i, o := range e.c.Settle(context.Background(), lease.OpAck, cs, settle.Args{}) {
		if o.Err != nil {
			t.Errorf("ack of message %d after the send waited: %v", i+1, o.Err)
		}
	}
}

// A Nak that cannot catch up with NATS fails before the ledger records it:
// its retry finds no claim to take for done, is sent, and the message comes
// back at once rather than after ack_wait, as the OK promises.
func TestANakThatCannotCatchUpLeavesNoClaim(t *testing.T) {
	e := startLedgered(t, consumer.Config{AckWait: 30 * time.Second, MaxAckPending: 1024})
	e.publish("orders.1", "one")
	res := e.fetch(consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second})
	if len(res.Messages) != 1 {
		t.Fatalf("fetch: %d messages", len(res.Messages))
	}
	cl := e.c.ClaimsOf(res.Messages[0])
	e.setAwake(func(context.Context) error { return errs.ErrUnavailable })
	if out := e.c.Settle(context.Background(), lease.OpNak, []token.Claims{cl}, settle.Args{}); !errors.Is(out[0].Err, errs.ErrUnavailable) {
		t.Fatalf("the Nak that could not catch up: %v; want UNAVAILABLE", out[0].Err)
	}
	e.setAwake(nil)
	if out := e.c.Settle(context.Background(), lease.OpNak, []token.Claims{cl}, settle.Args{}); out[0].Err != nil {
		t.Fatalf("the retried Nak: %v", out[0].Err)
	}
	if m := e.pullPlain(5 * time.Second); m == nil {
		t.Fatal("the message did not come back: the retried Nak was never sent")
	}
}
