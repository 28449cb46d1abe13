package consumer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// cutOff starts a consumer whose settles go through a proxy, with Terms
// recorded, and returns it, the proxy and the settles' connection.
func cutOff(t *testing.T, ackWait time.Duration) (*env, *natstest.Proxy, *nats.Conn) {
	t.Helper()
	var proxy *natstest.Proxy
	var settles *nats.Conn
	e := startRecordingTerms(t, consumer.Config{AckWait: ackWait, MaxAckPending: 1024}, func(ns *natsserver.Server) *nats.Conn {
		proxy = natstest.StartProxy(t, ns.Addr().String())
		settles = proxy.Connect(t)
		return settles
	}, 300*time.Millisecond)
	return e, proxy, settles
}

// termLost fetches one message and Terms it with the Term swallowed on its
// way (a NATS gone before it answered), and returns its claims.
func termLost(t *testing.T, e *env, proxy *natstest.Proxy) token.Claims {
	t.Helper()
	e.publish("orders.1", "one")
	res := e.fetch(consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second})
	if len(res.Messages) != 1 {
		t.Fatalf("fetch: %d messages", len(res.Messages))
	}
	cl := e.c.ClaimsOf(res.Messages[0])
	e.setAwake(func(context.Context) error { proxy.Blackhole(); return nil })
	out := e.c.Settle(context.Background(), lease.OpTerm, []token.Claims{cl}, settle.Args{Reason: "bad"})
	e.setAwake(nil)
	if !errors.Is(out[0].Err, settle.ErrUnconfirmed) {
		t.Fatalf("the Term whose answer was lost: %v; want it unconfirmed", out[0].Err)
	}
	return cl
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
	e, proxy, settles := cutOff(t, 30*time.Second)
	cl := termLost(t, e, proxy)
	if rs := e.terms(); len(rs) != 0 {
		t.Fatalf("recorded %v before the server confirmed the Term", rs)
	}
	reconnect(t, proxy, settles)
	natstest.Eventually(t, within, "the Term sent again and recorded", func() bool { return len(e.terms()) > 0 })
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
	e, proxy, settles := cutOff(t, time.Second)
	cl := termLost(t, e, proxy)
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
