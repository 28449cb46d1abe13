package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// A message that arrives for a canceled Fetch, with no Fetch after it, is
// nak'ed back once its pull has ended: redelivered in about a second, not
// after ack_wait (30s here, so that only a Nak explains it).
func TestOrphanIsNakedWhenNoFetchFollows(t *testing.T) {
	e := start(t, consumer.Config{AckWait: 30 * time.Second, MaxAckPending: 1024})
	tp := startTap(t, e.ns)
	e.abandonFetch(consumer.FetchRequest{Batch: 1, Expires: 10 * time.Second})

	seq := e.publish("orders.1", "left behind")
	tp.waitFor(t, 0, "delivery into the canceled Fetch's pull", func(m *nats.Msg) bool {
		d, ok := deliveryOf(m, seq)
		return ok && d == 1
	})

	// No Fetch through the Consumer follows; a client of its own pulls.
	m := e.pullPlain(5 * time.Second)
	if m == nil {
		t.Fatal("the message left by a canceled Fetch is not back with the server within 5s (ack_wait is 30s): it was not nak'ed")
	}
	md, err := m.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	if md.Sequence.Stream != seq || md.NumDelivered != 2 {
		t.Fatalf("redelivered stream seq %d delivery %d, want seq %d delivery 2", md.Sequence.Stream, md.NumDelivered, seq)
	}
	tp.waitFor(t, 0, "-NAK of the first delivery", func(m *nats.Msg) bool {
		d, ok := settleOf(m, seq, "-NAK")
		return ok && d == 1
	})
	if n := e.counted(consumer.OrphanNaked); n != 1 {
		t.Errorf("orphans counted as naked: %v, want 1", n)
	}
	if n := e.c.Orphans(); n != 0 {
		t.Errorf("orphans still held after the Nak: %d", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := m.DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
}

// holdPullOpen makes the consumer's next pull stay open on the server after
// it has received one message: another client holds one of the two places
// of max_ack_pending, so once the message is delivered the server holds the
// (no_wait) pull open until its next idle heartbeat, about a second, rather
// than ending it at once. The Consumer must be started with MaxAckPending 2.
func holdPullOpen(t *testing.T, e *env) {
	t.Helper()
	e.publish("orders.blocker", "held by another client")
	if e.pullPlain(within) == nil {
		t.Fatal("the other client got no message")
	}
}

// A message that arrives for a canceled Fetch goes to the next Fetch, as its
// first delivery, and is never nak'ed.
func TestOrphanIsHandedToTheNextFetch(t *testing.T) {
	e := start(t, consumer.Config{AckWait: 30 * time.Second, MaxAckPending: 2})
	// The orphan is held from its arrival until its pull ends and 250ms
	// more; a pull held open gives the next Fetch a second of room, so that
	// a slow machine does not turn the hand-over into a Nak.
	holdPullOpen(t, e)
	tp := startTap(t, e.ns)
	e.abandonFetch(consumer.FetchRequest{Batch: 10, Expires: 10 * time.Second})

	seq := e.publish("orders.1", "for the next fetch")
	natstest.Eventually(t, within, "the message held for the next Fetch", func() bool { return e.c.Orphans() == 1 })
	res := e.fetch(consumer.FetchRequest{Batch: 10, Expires: 5 * time.Second, Principal: "alice"})
	if len(res.Messages) != 1 {
		t.Fatalf("next fetch: %d messages (empty reason %v), want the orphan", len(res.Messages), res.Empty)
	}
	d := res.Messages[0]
	if d.Meta.StreamSeq != seq || d.Meta.Delivered != 1 || string(d.Data) != "for the next fetch" {
		t.Fatalf("next fetch got seq %d delivery %d %q, want seq %d delivery 1", d.Meta.StreamSeq, d.Meta.Delivered, d.Data, seq)
	}
	ackToken(t, e, d.Token, "alice")

	// The Consumer sends its settles on one connection, in order: a -NAK of
	// the orphan would reach the tap before the +ACK.
	acked := tp.waitFor(t, 0, "+ACK of the handed message", func(m *nats.Msg) bool {
		dv, ok := settleOf(m, seq, "+ACK")
		return ok && dv == 1
	})
	for _, m := range tp.before(acked) {
		if dv, ok := settleOf(m, seq, "-NAK"); ok {
			t.Fatalf("the orphan handed to the next Fetch was nak'ed too (delivery %d)", dv)
		}
	}
	if h, n := e.counted(consumer.OrphanHanded), e.counted(consumer.OrphanNaked); h != 1 || n != 0 {
		t.Errorf("orphans counted: handed %v, naked %v; want 1, 0", h, n)
	}
}

// A message that arrives for a canceled Fetch is not nak'ed while that
// Fetch's pull is still open on the server: the Nak would send it straight
// back into the same dead pull. Once the pull has ended it is still there,
// undelivered again, for the next Fetch.
func TestOrphanIsNotNakedWhileItsPullIsOpen(t *testing.T) {
	e := start(t, consumer.Config{AckWait: 30 * time.Second, MaxAckPending: 2})
	holdPullOpen(t, e)
	tp := startTap(t, e.ns)
	e.abandonFetch(consumer.FetchRequest{Batch: 10, Expires: 5 * time.Second})
	req := tp.waitFor(t, 0, "the canceled Fetch's pull request", pullRequest)
	inbox := tp.before(req + 1)[req].Reply

	seq := e.publish("orders.1", "into a dead pull")
	arrived := tp.waitFor(t, req, "delivery into the canceled Fetch's pull", func(m *nats.Msg) bool {
		d, ok := deliveryOf(m, seq)
		return ok && d == 1
	})
	if ci := e.info(); ci.NumWaiting < 1 {
		t.Fatal("the canceled Fetch's pull ended as its message arrived: this test needs it held open")
	}
	ended := tp.waitFor(t, arrived, "end of the canceled Fetch's pull", func(m *nats.Msg) bool {
		_, naked := settleOf(m, seq, "-NAK")
		return endOf(m, inbox) || naked
	})
	// At once: once the pull has ended, the orphan waits 250ms for a Fetch.
	res := e.fetch(consumer.FetchRequest{Batch: 10, Expires: 5 * time.Second})

	for _, m := range tp.before(ended + 1) {
		if d, ok := settleOf(m, seq, "-NAK"); ok {
			t.Fatalf("delivery %d was nak'ed while its pull was still open on the server", d)
		}
		if d, ok := deliveryOf(m, seq); ok && d > 1 {
			t.Fatalf("the message came back into its dead pull as delivery %d", d)
		}
	}
	if len(res.Messages) != 1 {
		t.Fatalf("next fetch: %d messages (empty reason %v), want the orphan", len(res.Messages), res.Empty)
	}
	if d := res.Messages[0]; d.Meta.StreamSeq != seq || d.Meta.Delivered != 1 {
		t.Fatalf("next fetch got seq %d delivery %d, want seq %d delivery 1", d.Meta.StreamSeq, d.Meta.Delivered, seq)
	}
	ackToken(t, e, res.Messages[0].Token, "")
	acked := tp.waitFor(t, ended, "+ACK of the handed message", func(m *nats.Msg) bool {
		_, ok := settleOf(m, seq, "+ACK")
		return ok
	})
	for _, m := range tp.before(acked) {
		if _, ok := settleOf(m, seq, "-NAK"); ok {
			t.Fatal("the orphan was nak'ed and handed to the next Fetch")
		}
	}
}

// ackToken acks the lease tok names through the Consumer that issued it.
func ackToken(t *testing.T, e *env, tok, principal string) {
	t.Helper()
	cl, err := e.keys.Open(tok, stream, name, principal)
	if err != nil {
		t.Fatalf("open token: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if out := e.c.Settle(ctx, lease.OpAck, []token.Claims{cl}, settle.Args{}); out[0].Err != nil {
		t.Fatalf("ack: %v", out[0].Err)
	}
}

// A message that arrives for a canceled Fetch goes to a Fetch that is
// already waiting, at once and as a first delivery: it does not wait for
// the canceled Fetch's pull to end and come back nak'ed.
func TestOrphanGoesToAFetchAlreadyWaiting(t *testing.T) {
	e := start(t, consumer.Config{AckWait: 30 * time.Second, MaxAckPending: 100})
	e.abandonFetch(consumer.FetchRequest{Batch: 1, Expires: time.Minute})
	type answer struct {
		res consumer.FetchResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*within)
		defer cancel()
		res, err := e.c.Fetch(ctx, consumer.FetchRequest{Batch: 1, Expires: time.Minute, Principal: "alice"})
		answered <- answer{res, err}
	}()
	natstest.Eventually(t, within, "both pulls waiting on the server", func() bool { return e.info().NumWaiting == 2 })

	// The server hands it to the oldest pull: the canceled Fetch's.
	seq := e.publish("orders.1", "for the waiting fetch")
	var a answer
	select {
	case a = <-answered:
	case <-time.After(within):
		t.Fatal("the waiting Fetch did not get the message the canceled Fetch's pull took")
	}
	if a.err != nil {
		t.Fatal(a.err)
	}
	if len(a.res.Messages) != 1 {
		t.Fatalf("waiting fetch: %d messages (empty reason %v), want the orphan", len(a.res.Messages), a.res.Empty)
	}
	if d := a.res.Messages[0]; d.Meta.StreamSeq != seq || d.Meta.Delivered != 1 {
		t.Fatalf("waiting fetch got seq %d delivery %d, want seq %d delivery 1", d.Meta.StreamSeq, d.Meta.Delivered, seq)
	}
	ackToken(t, e, a.res.Messages[0].Token, "alice")
	if h := e.counted(consumer.OrphanHanded); h != 1 {
		t.Errorf("orphans handed: %v, want 1", h)
	}
}

// An orphan whose lease a reset voided is not handed out: its token would
// settle nothing. Nor is it kept for a Nak, which could land on the
// delivery the server makes after the reset.
func TestOrphanVoidedByAResetIsDropped(t *testing.T) {
	e := start(t, consumer.Config{AckWait: 30 * time.Second, MaxAckPending: 2})
	holdPullOpen(t, e)
	e.abandonFetch(consumer.FetchRequest{Batch: 10, Expires: 10 * time.Second})
	seq := e.publish("orders.1", "held when the consumer is reset")
	natstest.Eventually(t, within, "the message held for the next Fetch", func() bool { return e.c.Orphans() == 1 })

	e.c.ResetTold("a reset") // another replica's word: every lease here is void
	res := e.fetch(consumer.FetchRequest{Batch: 10, Expires: 100 * time.Millisecond})
	for _, d := range res.Messages {
		if d.Meta.StreamSeq == seq && d.Meta.Delivered == 1 {
			t.Fatalf("the orphan of a voided lease was handed out")
		}
	}
	// Its pull is open for seconds yet, so no Nak can have taken it: the
	// Fetch dropped it.
	if n := e.c.Orphans(); n != 0 {
		t.Fatalf("%d orphans held after the Fetch, want the voided one dropped", n)
	}
}
