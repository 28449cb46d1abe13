package replica

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// forwardEnv is a replica holding one live lease of ORDERS/billing, and what
// a test sees of the forwards it takes: the settles that reach the server
// for the consumer, and the answers to forwards.
type forwardEnv struct {
	t       *testing.T
	nc      *nats.Conn // the test's own
	r       *Replica
	keys    *token.Keyring
	tok     string // the lease's token
	settles chan *nats.Msg
	answers chan *nats.Msg
	inbox   *nats.Subscription
}

func newForwardEnv(t *testing.T) *forwardEnv {
	t.Helper()
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e := &forwardEnv{t: t, nc: nc, keys: token.RandomKeyring(),
		settles: make(chan *nats.Msg, 16), answers: make(chan *nats.Msg, 16)}
	var err error
	e.r, err = New(ctx, Options{
		Conn:           natstest.Connect(t, ns),
		Consumers:      []consumer.Config{{Stream: "ORDERS", Name: "billing", AckWait: 30 * time.Second, MaxAckPending: 1024}},
		Keys:           e.keys,
		RequestTimeout: 2 * time.Second,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.r.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "orders.1", []byte("m")); err != nil {
		t.Fatal(err)
	}
	res, err := e.r.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("fetch: %d messages, %v; want 1", len(res.Messages), err)
	}
	e.tok = res.Messages[0].Token
	if _, err := nc.ChanSubscribe("$JS.ACK.ORDERS.billing.>", e.settles); err != nil {
		t.Fatal(err)
	}
	if e.inbox, err = nc.ChanSubscribe(nats.NewInbox(), e.answers); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return e
}

// forward is an Ack of the lease, as a replica would forward it now.
func (e *forwardEnv) forward() settle.Forward {
	return settle.Forward{Request: settle.Request{Op: lease.OpAck, Stream: "ORDERS", Consumer: "billing", Tokens: []string{e.tok}},
		Sent: time.Now().UnixMilli(), Nonce: "n1"}
}

// take hands the replica f as it would come on its forward subject, signed
// with sig ("" for none), and returns once the replica is done with it:
// whatever it did about it (a settle, an answer) has reached the test.
func (e *forwardEnv) take(f settle.Forward, sig func(subject string, body []byte) string) {
	e.t.Helper()
	body, err := json.Marshal(f)
	if err != nil {
		e.t.Fatal(err)
	}
	m := &nats.Msg{Subject: settle.Subject(e.r.ID()), Reply: e.inbox.Subject, Data: body, Header: nats.Header{}}
	if s := sig(m.Subject, body); s != "" {
		m.Header.Set("Jetgate-Sig", s)
	}
	m.Sub = e.inbox // lets Respond publish on the test's connection
	e.r.onForward(m)
	// A forward served takes a slot before onForward returns and gives it
	// back once its settle is confirmed and its answer sent.
	natstest.Eventually(e.t, 10*time.Second, "the forward served", func() bool { return len(e.r.forwarder.slots) == 0 })
	for _, nc := range []*nats.Conn{e.r.nc, e.nc} {
		if err := nc.Flush(); err != nil {
			e.t.Fatal(err)
		}
	}
}

// noSettle fails if a settle of the lease reached the server.
func (e *forwardEnv) noSettle(what string) {
	e.t.Helper()
	select {
	case m := <-e.settles:
		e.t.Fatalf("%s was acted on: %q reached %s", what, m.Data, m.Subject)
	default:
	}
}

// stillLive checks that the lease was left alone: its holder's own Nak
// succeeds, and is the first settle of it on the wire.
func (e *forwardEnv) stillLive() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := e.r.Settle(ctx, settle.Request{Op: lease.OpNak, Stream: "ORDERS", Consumer: "billing", Tokens: []string{e.tok}})
	if err != nil || out[0].Err != nil {
		e.t.Fatalf("the holder's Nak after the forwards: %v %v; want success, the lease untouched", out, err)
	}
	select {
	case m := <-e.settles:
		if string(m.Data) != "-NAK" {
			e.t.Fatalf("first settle of the lease on the wire: %q; want the holder's -NAK", m.Data)
		}
	case <-time.After(10 * time.Second):
		e.t.Fatal("the holder's Nak did not reach the server")
	}
}

// A forward whose signature header is there but wrong is neither acted on
// nor answered: garbage, a MAC of another deployment's key, or a genuine
// signature for another replica's subject or of another body.
func TestForwardWithAWrongSignatureIsNotActedOn(t *testing.T) {
	e := newForwardEnv(t)
	for name, sig := range map[string]func(string, []byte) string{
		"garbage":                    func(string, []byte) string { return "0.garbage" },
		"another deployment's key":   func(s string, b []byte) string { return token.RandomKeyring().Sign([]byte(s), b) },
		"signed for another replica": func(_ string, b []byte) string { return e.keys.Sign([]byte(settle.Subject(token.NewIssuerID())), b) },
		"signed over another body":   func(s string, _ []byte) string { return e.keys.Sign([]byte(s), []byte("{}")) },
	} {
		e.take(e.forward(), sig)
		e.noSettle("a forward with a wrong signature (" + name + ")")
		select {
		case m := <-e.answers:
			t.Fatalf("a forward with a wrong signature (%s) was answered: %s", name, m.Data)
		default:
		}
	}
	e.stillLive()
}

// A forward signed with the deployment's key but sent longer ago than the
// window (captured and replayed) is refused as a bad request, and its
// settle is not made.
func TestStaleSignedForwardIsRefused(t *testing.T) {
	e := newForwardEnv(t)
	f := e.forward()
	f.Sent = time.Now().Add(-time.Hour).UnixMilli()
	e.take(f, func(s string, b []byte) string { return e.keys.Sign([]byte(s), b) })
	e.noSettle("a forward sent an hour ago")
	select {
	case m := <-e.answers:
		var rep struct {
			Outcomes []struct{ Reason string } `json:"outcomes"`
		}
		if err := json.Unmarshal(m.Data, &rep); err != nil || len(rep.Outcomes) != 1 || rep.Outcomes[0].Reason != "INVALID_ARGUMENT" {
			t.Fatalf("answer to a forward sent an hour ago: %s (%v); want INVALID_ARGUMENT", m.Data, err)
		}
	default:
		t.Fatal("a signed forward sent an hour ago was not answered; want INVALID_ARGUMENT")
	}
	e.stillLive()
}
