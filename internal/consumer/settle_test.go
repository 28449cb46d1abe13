package consumer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// Extend restarts the lease at the full ack_wait (less the margin) from
// when it was sent, and returns a new token that carries the new deadline
// and this replica as issuer; the new token then settles the lease.
func TestExtendRestartsTheLeaseWithANewToken(t *testing.T) {
	const ackWait = 10 * time.Second
	const principal = "alice"
	e := start(t, consumer.Config{AckWait: ackWait, MaxAckPending: 1024})
	seq := e.publish("orders.1", "slow work")
	res := e.fetch(consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second, Principal: principal})
	fetched := time.Now()
	if len(res.Messages) != 1 {
		t.Fatalf("fetch: %d messages, want 1", len(res.Messages))
	}
	d := res.Messages[0]
	first, err := e.keys.Open(d.Token, stream, name, principal)
	if err != nil {
		t.Fatal(err)
	}
	// Deadlines are cut to the millisecond: let the clock leave the one the
	// message arrived in, so that the restarted deadline is a later one.
	natstest.Eventually(t, within, "the clock to move on by a millisecond", func() bool {
		return time.Now().Truncate(time.Millisecond).After(fetched.Truncate(time.Millisecond))
	})

	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	before := time.Now()
	out := e.c.Settle(ctx, lease.OpExtend, []token.Claims{first}, settle.Args{Principal: principal})
	after := time.Now()
	if out[0].Err != nil {
		t.Fatalf("extend: %v", out[0].Err)
	}
	wait := ackWait - lease.Margin(ackWait)
	lo, hi := before.Add(wait).Truncate(time.Millisecond), after.Add(wait)
	if got := out[0].Deadline; got.Before(lo) || got.After(hi) {
		t.Fatalf("extended deadline %v, want between %v and %v (sent + ack_wait - margin)", got, lo, hi)
	}
	if !out[0].Deadline.After(d.Deadline) {
		t.Fatalf("extended deadline %v is not later than the first, %v", out[0].Deadline, d.Deadline)
	}

	renewed, err := e.keys.Open(out[0].NewToken, stream, name, principal)
	if err != nil {
		t.Fatalf("open the new token: %v", err)
	}
	if !renewed.Deadline.Equal(out[0].Deadline) || renewed.Issuer != e.self ||
		renewed.StreamSeq != seq || renewed.ConsumerSeq != first.ConsumerSeq || renewed.Delivered != first.Delivered {
		t.Fatalf("new token claims %+v, want the lease %+v with deadline %v and issuer %v",
			renewed, first, out[0].Deadline, e.self)
	}
	if n := e.info().NumAckPending; n != 1 {
		t.Fatalf("after +WPI the server has %d acks pending, want 1", n)
	}

	if out := e.c.Settle(ctx, lease.OpAck, []token.Claims{renewed}, settle.Args{}); out[0].Err != nil {
		t.Fatalf("ack with the new token: %v", out[0].Err)
	}
	natstest.Eventually(t, within, "no ack pending on the server", func() bool { return e.info().NumAckPending == 0 })
}

// adoptable pulls a message with nats.go on the consumer, as a replica that
// is gone did, and returns the claims its token would have carried. The
// consumer filters orders.billed and two other messages come first, so
// that the delivery's stream and consumer sequences differ.
func adoptable(t *testing.T, e *env) token.Claims {
	t.Helper()
	e.publish("orders.other", "not for billing")
	e.publish("orders.other", "not for billing")
	seq := e.publish("orders.billed", "adopt me")
	m := e.pullPlain(within)
	if m == nil {
		t.Fatal("no message to adopt")
	}
	md, err := m.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	if md.Sequence.Stream != seq || md.Sequence.Consumer == seq {
		t.Fatalf("delivery of stream seq %d consumer seq %d, want stream seq %d and another consumer seq",
			md.Sequence.Stream, md.Sequence.Consumer, seq)
	}
	return token.Claims{
		Issuer:      token.NewIssuerID(), // another replica, now gone
		StreamSeq:   md.Sequence.Stream,
		ConsumerSeq: md.Sequence.Consumer,
		Delivered:   md.NumDelivered,
		Deadline:    time.Now().Add(20 * time.Second).Truncate(time.Millisecond),
	}
}

func adoptConfig() consumer.Config {
	return consumer.Config{AckWait: 30 * time.Second, MaxAckPending: 1024, FilterSubjects: []string{"orders.billed"}}
}

// A lease known only from its claims is acked on its rebuilt ack subject;
// once the table knows it settled, adopting it again sends nothing, and a
// different settle of it is refused.
func TestAdoptAcksALeaseFromItsClaimsOnce(t *testing.T) {
	e := start(t, adoptConfig())
	cl := adoptable(t, e)
	tp := startTap(t, e.ns)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()

	if out := e.c.Adopt(ctx, lease.OpAck, []token.Claims{cl}, settle.Args{}); out[0].Err != nil {
		t.Fatalf("adopt ack: %v", out[0].Err)
	}
	natstest.Eventually(t, within, "the adopted ack applied on the server", func() bool {
		ci := e.info()
		return ci.NumAckPending == 0 && ci.AckFloor.Stream == cl.StreamSeq
	})

	// A retry, through this token or another gone replica's.
	again := cl
	again.Issuer = token.NewIssuerID()
	for _, c := range []token.Claims{cl, again} {
		if out := e.c.Adopt(ctx, lease.OpAck, []token.Claims{c}, settle.Args{}); out[0].Err != nil {
			t.Fatalf("adopt the settled lease again: %v, want success (an idempotent retry)", out[0].Err)
		}
	}
	acks, naks := settlesSent(t, e, tp, cl.StreamSeq, "retries")
	if acks != 1 || naks != 0 {
		t.Fatalf("sent %d +ACK and %d -NAK for one adopted, acked lease and its retries; want 1 +ACK", acks, naks)
	}

	if out := e.c.Adopt(ctx, lease.OpNak, []token.Claims{cl}, settle.Args{}); !errors.Is(out[0].Err, errs.ErrLeaseSettled) {
		t.Fatalf("adopt nak after ack: %v, want %v", out[0].Err, errs.ErrLeaseSettled)
	}
	if acks, naks := settlesSent(t, e, tp, cl.StreamSeq, "nak"); acks != 1 || naks != 0 {
		t.Fatalf("sent %d +ACK and %d -NAK after a Nak of an acked lease; want the one +ACK", acks, naks)
	}
}

// settlesSent counts the +ACKs and -NAKs the Consumer has sent for stream
// sequence seq, up to now: whatever it sent on its connection reaches the
// tap before a marker sent after it on the same connection.
func settlesSent(t *testing.T, e *env, tp *tap, seq uint64, marker string) (acks, naks int) {
	t.Helper()
	subject := "marker." + marker
	if err := e.nc.Publish(subject, nil); err != nil {
		t.Fatal(err)
	}
	mark := tp.waitFor(t, 0, "the marker", func(m *nats.Msg) bool { return m.Subject == subject })
	for _, m := range tp.before(mark) {
		if _, ok := settleOf(m, seq, "+ACK"); ok {
			acks++
		}
		if _, ok := settleOf(m, seq, "-NAK"); ok {
			naks++
		}
	}
	return acks, naks
}

// Extending an adopted lease makes this replica its holder: the new token
// names this replica, so that later settles come here.
func TestExtendOfAnAdoptedLeaseIsHeldHere(t *testing.T) {
	e := start(t, adoptConfig())
	cl := adoptable(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()

	out := e.c.Adopt(ctx, lease.OpExtend, []token.Claims{cl}, settle.Args{Principal: "bob"})
	if out[0].Err != nil {
		t.Fatalf("adopt extend: %v", out[0].Err)
	}
	renewed, err := e.keys.Open(out[0].NewToken, stream, name, "bob")
	if err != nil {
		t.Fatalf("open the new token: %v", err)
	}
	if renewed.Issuer != e.self || renewed.StreamSeq != cl.StreamSeq || renewed.Delivered != cl.Delivered {
		t.Fatalf("new token claims %+v, want the adopted lease with issuer %v", renewed, e.self)
	}
	if out := e.c.Settle(ctx, lease.OpAck, []token.Claims{renewed}, settle.Args{}); out[0].Err != nil {
		t.Fatalf("ack with the new token, here: %v", out[0].Err)
	}
	natstest.Eventually(t, within, "no ack pending on the server", func() bool { return e.info().NumAckPending == 0 })
}

// A caller's settle that meets another settle of the same lease in flight
// (the issuer's keep-alive +WPI, a client library's extend beside its
// handler's ack) waits for it rather than failing SETTLE_IN_PROGRESS: the
// caller could not know of it. While the other never ends, the settle
// fails SETTLE_IN_PROGRESS only once the request timeout (2s here) has
// passed; once it ends, the settle goes through.
func TestASettleWaitsForAnotherInFlight(t *testing.T) {
	e := start(t, consumer.Config{AckWait: 30 * time.Second, MaxAckPending: 1024})
	e.publish("orders.1", "one")
	res := e.fetch(consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second})
	if len(res.Messages) != 1 {
		t.Fatalf("fetch: %d messages, want 1", len(res.Messages))
	}
	cl, err := e.keys.Open(res.Messages[0].Token, stream, name, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()

	if err := e.c.BeginInFlight(cl, lease.OpExtend); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	out := e.c.Settle(ctx, lease.OpAck, []token.Claims{cl}, settle.Args{})
	if !errors.Is(out[0].Err, errs.ErrSettleInProgress) {
		t.Fatalf("ack while an extend never ends: %v; want SETTLE_IN_PROGRESS", out[0].Err)
	}
	if waited := time.Since(began); waited < 2*time.Second {
		t.Fatalf("the ack failed SETTLE_IN_PROGRESS after %v: it did not wait out the request timeout for the extend in flight", waited)
	}
	e.c.EndInFlight(cl, lease.OpExtend)

	if err := e.c.BeginInFlight(cl, lease.OpExtend); err != nil {
		t.Fatal(err)
	}
	acked := make(chan settle.Outcome, 1)
	go func() { acked <- e.c.Settle(ctx, lease.OpAck, []token.Claims{cl}, settle.Args{})[0] }()
	e.c.EndInFlight(cl, lease.OpExtend)
	if o := <-acked; o.Err != nil {
		t.Fatalf("ack once the extend in flight ended: %v", o.Err)
	}
	natstest.Eventually(t, within, "no ack pending on the server", func() bool { return e.info().NumAckPending == 0 })
}
