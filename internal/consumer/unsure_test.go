package consumer_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/pull"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// onTerm is a consumer's configuration with ackWait and a dead letter of
// its Terms too.
func onTerm(ackWait time.Duration) consumer.Config {
	return consumer.Config{AckWait: ackWait, MaxAckPending: 1024, DeadLetter: &consumer.DeadLetter{Subject: "dead.orders", OnTerm: true}}
}

// cutOff starts a consumer of cfg whose settles go through a proxy, with
// Terms recorded, and returns it, the proxy and the settles' connection.
func cutOff(t *testing.T, cfg consumer.Config, with extras) (*env, *natstest.Proxy, *nats.Conn) {
	t.Helper()
	var proxy *natstest.Proxy
	var settles *nats.Conn
	e := startRecordingTerms(t, cfg, func(ns *natsserver.Server) *nats.Conn {
		proxy = natstest.StartProxy(t, ns.Addr().String())
		settles = proxy.Connect(t)
		return settles
	}, 300*time.Millisecond, with)
	return e, proxy, settles
}

// termLost fetches one message and Terms it with the Term swallowed on its
// way (a NATS gone before it answered), and returns its claims. The
// consumer's own tries again wait until hold is closed (nil: they do not).
func termLost(t *testing.T, e *env, proxy *natstest.Proxy, hold chan struct{}) token.Claims {
	t.Helper()
	return settleLost(t, e, proxy, hold, lease.OpTerm)
}

// settleLost is termLost for a settle of op.
func settleLost(t *testing.T, e *env, proxy *natstest.Proxy, hold chan struct{}, op lease.Op) token.Claims {
	t.Helper()
	e.publish("orders.1", "one")
	res := e.fetch(consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second})
	if len(res.Messages) != 1 {
		t.Fatalf("fetch: %d messages", len(res.Messages))
	}
	cl := e.c.ClaimsOf(res.Messages[0])
	loseSettle(t, e, proxy, hold, op, cl)
	return cl
}

// loseSettle settles cl by op with the settle swallowed on its way, as
// settleLost does.
func loseSettle(t *testing.T, e *env, proxy *natstest.Proxy, hold chan struct{}, op lease.Op, cl token.Claims) {
	t.Helper()
	var once sync.Once // the consumer's own retry must not black-hole the proxy again
	e.setAwake(func(ctx context.Context) error {
		first := false
		once.Do(func() { proxy.Blackhole(); first = true })
		if first || hold == nil {
			return nil
		}
		select {
		case <-hold:
			return nil
		case <-ctx.Done():
			return errs.ErrUnavailable
		}
	})
	out := e.c.Settle(context.Background(), op, []token.Claims{cl}, settle.Args{Reason: "bad"})
	if !errors.Is(out[0].Err, settle.ErrUnconfirmed) {
		t.Fatalf("the %v whose answer was lost: %v; want it unconfirmed", op, out[0].Err)
	}
}

// reconnect lets the settles' connection through the proxy again.
func reconnect(t *testing.T, proxy *natstest.Proxy, settles *nats.Conn) {
	t.Helper()
	proxy.Thaw()
	if err := settles.ForceReconnect(); err != nil {
		t.Fatal(err)
	}
}

// A Term whose answer never came is sent again by the consumer itself once
// NATS is back, while its lease lasts, and recorded for its dead letter once
// the server confirms it: applied the first time, its answer and advisory
// lost, it would otherwise have none, and no redelivery either. The caller's
// own retry is then answered as done.
func TestATermWhoseAnswerWasLostIsSentAgainAndRecorded(t *testing.T) {
	t.Run("never applied", func(t *testing.T) { termSentAgain(t, false) })
	// The server applied the Term and then stopped, its answer lost: it
	// answers the second Term of a message it no longer holds.
	t.Run("applied", func(t *testing.T) { termSentAgain(t, true) })
}

func termSentAgain(t *testing.T, applied bool) {
	e, proxy, settles := cutOff(t, onTerm(30*time.Second), 0)
	cl := termLost(t, e, proxy, nil)
	if applied {
		subj := pull.AckSubject(stream, name, cl.Delivered, cl.StreamSeq, cl.ConsumerSeq)
		if _, err := e.nc.Request(subj, []byte("+TERM bad"), within); err != nil {
			t.Fatalf("the Term applied on the server: %v", err)
		}
	}
	if rs := e.terms(); len(rs) != 0 {
		t.Fatalf("recorded %v before the server confirmed the Term", rs)
	}
	if n := e.c.UnsureTerms(); n != 1 {
		t.Errorf("UnsureTerms while NATS is away: %d; want 1 (jetgate_terms_unrecorded)", n)
	}
	reconnect(t, proxy, settles)
	natstest.Eventually(t, within, "the Term sent again and recorded", func() bool { return len(e.terms()) > 0 })
	natstest.Eventually(t, within, "UnsureTerms back at 0", func() bool { return e.c.UnsureTerms() == 0 })
	rs := e.terms()
	if len(rs) != 1 || rs[0].StreamSeq != cl.StreamSeq || rs[0].Delivered != cl.Delivered || rs[0].reason != "bad" {
		t.Errorf("recorded %+v; want stream sequence %d, delivery %d, reason bad, once", rs, cl.StreamSeq, cl.Delivered)
	}
	if n := e.info().NumAckPending; n != 0 {
		t.Errorf("%d messages await an ack on the server; want 0, the Term applied", n)
	}
	if out := e.c.Settle(context.Background(), lease.OpTerm, []token.Claims{cl}, settle.Args{Reason: "bad"}); out[0].Err != nil {
		t.Errorf("the caller's retry of the Term: %v; want it answered as done", out[0].Err)
	}
	if m := e.pullPlain(time.Second); m != nil {
		t.Error("the terminated message was delivered again")
	}
	if rs := e.terms(); len(rs) != 1 {
		t.Errorf("recorded %d Terms; want 1", len(rs))
	}
}

// Past its lease's deadline a Term whose answer never came is not sent
// again, nor recorded: the server may have redelivered its message to
// another holder, whose delivery it would terminate.
func TestATermWhoseAnswerWasLostIsGivenUpAtItsDeadline(t *testing.T) {
	e, proxy, settles := cutOff(t, onTerm(time.Second), 0)
	cl := termLost(t, e, proxy, nil)
	m := e.pullPlain(5 * time.Second) // the server's redelivery, after ack_wait
	if m == nil {
		t.Fatal("the server did not redeliver the message whose Term it never got")
	}
	reconnect(t, proxy, settles)
	if err := settles.Flush(); err != nil {
		t.Fatal(err)
	}
	out := e.c.Settle(context.Background(), lease.OpTerm, []token.Claims{cl}, settle.Args{Reason: "bad"})
	if !errors.Is(out[0].Err, errs.ErrLeaseExpired) {
		t.Errorf("the caller's retry past the deadline: %v; want LEASE_EXPIRED", out[0].Err)
	}
	if rs := e.terms(); len(rs) != 0 {
		t.Errorf("recorded %+v: a Term past its deadline", rs)
	}
	if n := e.info().NumAckPending; n != 1 {
		t.Errorf("%d messages await an ack on the server; want 1, the other holder's", n)
	}
	if err := m.Ack(); err != nil {
		t.Errorf("the other holder's Ack: %v", err)
	}
}

// A Term whose answer never came is not sent again once its token was
// settled otherwise through another replica, which took this one for gone
// (NATS_UNAVAILABLE, the caller Naks instead): the ledger holds that Nak,
// and the Term would land on its redelivery.
func TestATermWhoseAnswerWasLostIsNotSentAgainOverAnotherReplicasNak(t *testing.T) {
	e, proxy, settles := cutOff(t, onTerm(30*time.Second), withLedger)
	hold := make(chan struct{}) // the consumer's retries wait for the other replica's Nak
	cl := termLost(t, e, proxy, hold)
	m := nakedElsewhere(t, e, cl)
	close(hold)
	reconnect(t, proxy, settles)
	// The consumer's retry meets the Nak's claim: refused, nothing sent.
	natstest.Eventually(t, within, "the Term tried again", func() bool { return !e.c.RetryingTerms() })
	if rs := e.terms(); len(rs) != 0 {
		t.Errorf("recorded %+v: a Term over another replica's Nak", rs)
	}
	if err := m.Ack(); err != nil {
		t.Errorf("the other holder's Ack: %v", err)
	}
	natstest.Eventually(t, within, "the other holder's Ack applied", func() bool { return e.info().NumAckPending == 0 })
	if ci := e.info(); ci.AckFloor.Stream != cl.StreamSeq {
		t.Errorf("ack floor %d; want %d", ci.AckFloor.Stream, cl.StreamSeq)
	}
}

// nakedElsewhere naks the delivery of cl as another replica that adopted
// its lease does (its claim in the ledger, then the Nak), and returns the
// redelivery, pulled by another holder.
func nakedElsewhere(t *testing.T, e *env, cl token.Claims) jetstream.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	other, err := settle.OpenLedger(ctx, e.js, 1) // the other replica's
	if err != nil {
		t.Fatal(err)
	}
	entry := settle.Entry{Stream: stream, Consumer: name, StreamSeq: cl.StreamSeq, Delivered: cl.Delivered, TTL: 30 * time.Second}
	if prior, fails := other.Claim(ctx, lease.OpNak, []settle.Entry{entry}); fails[0] != nil || prior[0] != 0 {
		t.Fatalf("the other replica's claim: %v %v", prior[0], fails[0])
	}
	subj := pull.AckSubject(stream, name, cl.Delivered, cl.StreamSeq, cl.ConsumerSeq)
	if _, err := e.nc.Request(subj, []byte("-NAK"), within); err != nil {
		t.Fatalf("the other replica's Nak: %v", err)
	}
	m := e.pullPlain(5 * time.Second)
	if m == nil {
		t.Fatal("the nak'ed message was not redelivered")
	}
	return m
}

// The caller's own retry of an Ack or Term whose answer never came is
// refused once it nak'ed the token through another replica meanwhile (told
// NATS_UNAVAILABLE, it may): that replica took this one for gone and
// adopted the lease, and the retry would land on the Nak's redelivery, now
// another holder's. The retry consults the ledger, as an adopted lease's
// settle does.
func TestACallersRetryOfASettleWhoseAnswerWasLostIsRefusedOverAnotherReplicasNak(t *testing.T) {
	for _, op := range []lease.Op{lease.OpAck, lease.OpTerm} {
		t.Run(op.String(), func(t *testing.T) {
			// Without on_term: the consumer sends no Term again itself.
			e, proxy, settles := cutOff(t, consumer.Config{AckWait: 30 * time.Second, MaxAckPending: 1024}, withLedger)
			cl := settleLost(t, e, proxy, nil, op)
			m := nakedElsewhere(t, e, cl)
			reconnect(t, proxy, settles)
			if err := settles.Flush(); err != nil {
				t.Fatal(err)
			}
			out := e.c.Settle(context.Background(), op, []token.Claims{cl}, settle.Args{Reason: "bad"})
			if !errors.Is(out[0].Err, errs.ErrLeaseSettled) {
				t.Errorf("the caller's retry over another replica's Nak: %v; want LEASE_SETTLED", out[0].Err)
			}
			if n := e.info().NumAckPending; n != 1 {
				t.Errorf("%d messages await an ack on the server; want 1, the other holder's", n)
			}
			if err := m.DoubleAck(context.Background()); err != nil {
				t.Errorf("the other holder's Ack: %v", err)
			}
		})
	}
}

// fetchOne publishes data and fetches it alone, and returns its claims.
func fetchOne(t *testing.T, e *env, data string) token.Claims {
	t.Helper()
	e.publish("orders."+data, data)
	res := e.fetch(consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second})
	if len(res.Messages) != 1 {
		t.Fatalf("fetch: %d messages", len(res.Messages))
	}
	return e.c.ClaimsOf(res.Messages[0])
}

// nakComesBack naks cl with the replica caught up again, and checks that
// the message (data) is redelivered at once: the Nak was sent.
func nakComesBack(t *testing.T, e *env, cl token.Claims, data string) {
	t.Helper()
	e.setAwake(nil)
	if out := e.c.Settle(context.Background(), lease.OpNak, []token.Claims{cl}, settle.Args{}); out[0].Err != nil {
		t.Fatalf("the Nak: %v; want it sent", out[0].Err)
	}
	if m := e.pullPlain(5 * time.Second); m == nil || string(m.Data()) != data {
		t.Fatalf("the nak'ed message was not redelivered at once: %v", m)
	}
}

// caughtUpOnce has the replica catch up with NATS once (before the ledger
// is asked) and never again (after it), until setAwake(nil).
func caughtUpOnce(e *env) {
	var calls atomic.Int32
	e.setAwake(func(context.Context) error {
		if calls.Add(1) == 1 {
			return nil
		}
		return errs.ErrUnavailable
	})
}

// In a batch with such a retry, the first tries do not ask the ledger: one
// that then fails (here the replica cannot catch up with NATS once the
// ledger was asked) leaves no claim behind, and the caller's Nak of it
// afterwards is sent, not refused LEASE_SETTLED.
func TestAFirstTryBatchedWithARetryLeavesNoClaim(t *testing.T) {
	e, proxy, settles := cutOff(t, consumer.Config{AckWait: 30 * time.Second, MaxAckPending: 1024}, withLedger)
	retry := settleLost(t, e, proxy, nil, lease.OpAck)
	reconnect(t, proxy, settles)
	if err := settles.Flush(); err != nil {
		t.Fatal(err)
	}
	first := fetchOne(t, e, "two")
	caughtUpOnce(e)
	out := e.c.Settle(context.Background(), lease.OpAck, []token.Claims{retry, first}, settle.Args{})
	for i, o := range out {
		if !errors.Is(o.Err, errs.ErrUnavailable) {
			t.Fatalf("settle %d of the batch: %v; want NATS_UNAVAILABLE (no catch-up)", i, o.Err)
		}
	}
	nakComesBack(t, e, first, "two")
}

// A Nak claimed in the ledger and then, for sure, not sent (here the replica
// cannot catch up with NATS once the ledger was asked) lets its claim go:
// the caller's retry is sent, and the message comes back at once, rather
// than be answered as done and come back only after ack_wait.
func TestANakClaimedAndNotSentLetsItsClaimGo(t *testing.T) {
	e, _, _ := cutOff(t, consumer.Config{AckWait: 30 * time.Second, MaxAckPending: 1024}, withLedger)
	cl := fetchOne(t, e, "one")
	caughtUpOnce(e)
	if out := e.c.Settle(context.Background(), lease.OpNak, []token.Claims{cl}, settle.Args{}); !errors.Is(out[0].Err, errs.ErrUnavailable) {
		t.Fatalf("the Nak: %v; want NATS_UNAVAILABLE (no catch-up)", out[0].Err)
	}
	nakComesBack(t, e, cl, "one")
}

// A replica that stops sends once more, as it closes, the Terms whose
// answer never came: those it still held would have no dead letter.
func TestATermWhoseAnswerWasLostIsSentAgainAsTheConsumerCloses(t *testing.T) {
	e, proxy, settles := cutOff(t, onTerm(30*time.Second), 0)
	hold := make(chan struct{}) // the consumer's own retries wait, until Run has returned
	cl := termLost(t, e, proxy, hold)
	reconnect(t, proxy, settles)
	if err := settles.Flush(); err != nil {
		t.Fatal(err)
	}
	e.stopRun() // its retry, waiting in the hold, gives up with Run and keeps the Term
	close(hold)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	e.c.Close(ctx)
	rs := e.terms()
	if len(rs) != 1 || rs[0].StreamSeq != cl.StreamSeq {
		t.Fatalf("recorded %+v as the consumer closed; want the Term of stream sequence %d", rs, cl.StreamSeq)
	}
	if n := e.info().NumAckPending; n != 0 {
		t.Errorf("%d messages await an ack on the server; want 0, the Term applied", n)
	}
}

// A consumer without dead_letter.on_term has no dead letter of its Terms to
// record: a Term whose answer never came is not sent again (its caller's
// retry, within the lease, still is).
func TestATermWhoseAnswerWasLostIsNotKeptWithoutOnTerm(t *testing.T) {
	e, proxy, settles := cutOff(t, consumer.Config{AckWait: 30 * time.Second, MaxAckPending: 1024}, 0)
	cl := termLost(t, e, proxy, nil)
	if e.c.RetryingTerms() {
		t.Error("a Term of a consumer without on_term kept to be sent again")
	}
	reconnect(t, proxy, settles)
	if err := settles.Flush(); err != nil {
		t.Fatal(err)
	}
	if out := e.c.Settle(context.Background(), lease.OpTerm, []token.Claims{cl}, settle.Args{Reason: "bad"}); out[0].Err != nil {
		t.Errorf("the caller's retry of the Term: %v", out[0].Err)
	}
	if rs := e.terms(); len(rs) != 0 {
		t.Errorf("recorded %+v for a consumer without on_term", rs)
	}
}
