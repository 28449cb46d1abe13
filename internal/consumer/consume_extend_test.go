package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// A Consume stream's lease that its caller extends with Extend (not the
// stream's auto_extend) keeps the stream's credit until the new deadline:
// the stream does not pull past max_messages at the old one.
func TestConsumeKeepsTheCreditOfALeaseItsCallerExtended(t *testing.T) {
	e := start(t, consumer.Config{AckWait: 2 * time.Second, MaxAckPending: 100})
	e.publish("orders.1", "first")
	e.publish("orders.2", "second")
	sent := make(chan []*consumer.Delivery, 4)
	consumeInto(t, e, consumer.ConsumeRequest{MaxMessages: 1, Heartbeat: time.Hour}, sent, nil)
	first := receiveBatch(t, sent, "the first message")[0]
	cl, err := e.keys.Open(first.Token, stream, name, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	<-time.After(time.Until(first.Deadline.Add(-time.Second))) // a lease's clock, not a wait for a condition
	o := e.c.Settle(ctx, lease.OpExtend, []token.Claims{cl}, settle.Args{})[0]
	if o.Err != nil {
		t.Fatalf("extend: %v", o.Err)
	}
	// Past the first deadline, well before the extended one: the stream
	// still holds its one lease.
	select {
	case ds := <-sent:
		t.Fatalf("the stream took %d more messages (seq %d delivered %d) at the lease's old deadline %v, though its caller extended it to %v", len(ds), ds[0].Meta.StreamSeq, ds[0].Meta.Delivered, first.Deadline, o.Deadline)
	case <-time.After(time.Until(first.Deadline.Add(500 * time.Millisecond))):
	}
}

// A lease brought forward below its first token's deadline (a reconnect, a
// new leader) is still the replica's own to extend: a Consume stream's
// auto_extend keeps it alive past that deadline rather than have its own
// extend refused as a token of another delivery.
func TestAutoExtendKeepsALeaseBroughtForward(t *testing.T) {
	e := start(t, consumer.Config{AckWait: 2 * time.Second})
	e.publish("orders.1", "kept")
	sent := make(chan []*consumer.Delivery, 4)
	consumeInto(t, e, consumer.ConsumeRequest{MaxMessages: 1, Heartbeat: time.Hour, AutoExtend: true}, sent, nil)
	first := receiveBatch(t, sent, "the message")[0]
	e.c.LeaderElected() // a second sooner: below the deadline its token carries
	natstest.Eventually(t, within, "the lease extended past its first deadline, not redelivered", func() bool {
		hs := e.c.Holders()
		return len(hs) == 1 && hs[0].Latest.After(first.Deadline) && e.info().NumRedelivered == 0
	})
	select {
	case ds := <-sent:
		t.Fatalf("the stream received delivery %d of the message: its lease lapsed", ds[0].Meta.Delivered)
	default:
	}
}

// A pull sent before a new leader was elected may bring the old leader's
// deliveries after the leases were cut: each is cut as it is leased.
func TestADeliveryToAPullFromBeforeANewLeaderIsCut(t *testing.T) {
	e := start(t, consumer.Config{AckWait: time.Minute})
	type fetched struct {
		res consumer.FetchResult
		err error
	}
	done := make(chan fetched, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		res, err := e.c.Fetch(ctx, consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second})
		done <- fetched{res, err}
	}()
	natstest.Eventually(t, within, "the Fetch's pull waiting on the server", func() bool { return e.info().NumWaiting == 1 })
	e.c.LeaderElected()
	e.publish("orders.1", "from the old leader")
	f := <-done
	if f.err != nil || len(f.res.Messages) != 1 {
		t.Fatalf("fetch: %v %v", f.res, f.err)
	}
	m := f.res.Messages[0]
	got, want := e.c.Holders()[0].Latest, e.claimsOf(m).Deadline.Add(-lease.RestorePrecision)
	if got.Before(want) || !got.Before(want.Add(time.Millisecond)) { // the token's to the millisecond
		t.Fatalf("the lease ends at %v; want %v, a second before its token's deadline", got, want)
	}
	if !m.Deadline.Equal(got) {
		t.Errorf("handed out with the deadline %v; its lease ends at %v", m.Deadline, got)
	}
}

// An operator cuts ack_wait while a Consume stream with auto_extend holds a
// lease: the lease is re-dated below its token's deadline, and the stream
// still extends it by the new timing, so the server does not redeliver the
// message its caller is working on.
func TestAutoExtendKeepsALeaseAnOperatorsEditCut(t *testing.T) {
	e := start(t, consumer.Config{AckWait: 10 * time.Second})
	e.publish("orders.1", "kept")
	sent := make(chan []*consumer.Delivery, 4)
	consumeInto(t, e, consumer.ConsumeRequest{MaxMessages: 1, Heartbeat: time.Hour, AutoExtend: true}, sent, nil)
	receiveBatch(t, sent, "the message")
	cfg := e.info().Config
	cfg.AckWait = 3 * time.Second
	payload := updateRequest(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	edited := time.Now()
	e.edit(func(c *jetstream.ConsumerConfig) { c.AckWait = 3 * time.Second })
	e.c.FollowUpdate(ctx, payload) // as the relay does when the request passes
	natstest.Eventually(t, within, "the lease extended past the server's new redelivery, not redelivered", func() bool {
		hs := e.c.Holders()
		return len(hs) == 1 && hs[0].Latest.After(edited.Add(3*time.Second)) && e.info().NumRedelivered == 0
	})
	select {
	case ds := <-sent:
		t.Fatalf("the stream received delivery %d of the message: its lease lapsed", ds[0].Meta.Delivered)
	default:
	}
}
