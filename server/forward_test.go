package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// A NATS client that is not a replica cannot settle through the forward
// channel: an unsigned forward (here with op 0, whose empty body JetStream
// would take as +ACK) gets no answer and reaches no ack subject, and the
// caller's own Nak then succeeds.
func TestUnsignedForwardIsIgnored(t *testing.T) {
	h := newHarness(t)
	h.publish(1)
	m := h.fetchOne(time.Second)
	tp := h.tap()
	body, _ := json.Marshal(map[string]any{"op": 0, "stream": stream, "consumer": consumer, "tokens": []string{m.GetToken()}})
	_, err := h.nc.Request(settle.Subject(h.gw.ID()), body, 500*time.Millisecond)
	if !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("unsigned forward: %v; want no answer at all", err)
	}
	wantNoFailures(t, nak(t, h, h.cons, 0, m.GetToken()))
	if got := tp.next(t); string(got.Data) != "-NAK" {
		t.Fatalf("first settle on the wire: %q; want the caller's -NAK", got.Data)
	}
}

// A signed forward is validated like an API request, and the issuer acts
// only on leases it issued.
func TestSignedForwardIsValidatedAndOnlyForTheIssuer(t *testing.T) {
	keys := token.RandomKeyring()
	h := newHarness(t, withKeys(keys))
	h.publish(2)
	mine := h.fetchOne(time.Second) // issued by A
	b, bc, _ := h.startGateway()
	theirs := h.fetch(bc, consumer, 1, time.Second).GetMessages()[0] // issued by B
	if b.ID() == h.gw.ID() {
		t.Fatal("two replicas share an id")
	}
	s, err := settle.NewSender(h.nc, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tp := h.tap()

	out, err := s.SendForward(ctx, keys, h.gw.ID(), settle.Forward{Request: settle.Request{Op: 0, Stream: stream, Consumer: consumer, Tokens: []string{mine.GetToken()}}})
	if err != nil || len(out) != 1 || !errors.Is(out[0].Err, errs.ErrInvalidArgument) {
		t.Fatalf("signed forward with op 0: %v %v; want INVALID_ARGUMENT", out, err)
	}
	out, err = s.SendForward(ctx, keys, h.gw.ID(), settle.Forward{Request: settle.Request{Op: lease.OpAck, Stream: stream, Consumer: consumer,
		Tokens: []string{theirs.GetToken(), mine.GetToken()}}})
	if err != nil || len(out) != 2 {
		t.Fatalf("forward: %v %v", out, err)
	}
	if !errors.Is(out[0].Err, errs.ErrLeaseExpired) {
		t.Errorf("A acted on a lease B issued: %v; want LEASE_EXPIRED", out[0].Err)
	}
	if out[1].Err != nil {
		t.Errorf("A refused its own lease: %v", out[1].Err)
	}
	if got := tp.next(t); string(got.Data) != "+ACK" || strings.Split(got.Subject, ".")[5] != strconv.FormatUint(mine.GetMetadata().GetStreamSeq(), 10) {
		t.Fatalf("settle on the wire: %s %q; want +ACK of A's own lease only", got.Subject, got.Data)
	}
	wantNoFailures(t, ack(t, h, bc, theirs.GetToken())) // B's lease is still B's
	// A forward signed with another deployment's key is not answered.
	_, err = s.SendForward(ctx, token.RandomKeyring(), h.gw.ID(), settle.Forward{Request: settle.Request{Op: lease.OpAck, Stream: stream, Consumer: consumer, Tokens: []string{mine.GetToken()}}})
	if !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("forward signed with a foreign key: %v; want no answer (UNAVAILABLE)", err)
	}
}

// A NATS client that answers forwards in the issuer's place is not
// believed: the settle waits for the issuer's signed answer.
func TestForgedForwardReplyIsIgnored(t *testing.T) {
	keys := token.RandomKeyring()
	h := newHarness(t, withKeys(keys))
	h.publish(1)
	m := h.fetchOne(time.Second)
	_, bc, _ := h.startGateway()
	rogue, err := h.nc.Subscribe(settle.Subject(h.gw.ID()), func(msg *nats.Msg) {
		_ = msg.Respond([]byte(`{"outcomes":[{"reason":"LEASE_EXPIRED"}]}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rogue.Unsubscribe() })
	if err := h.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	wantNoFailures(t, ack(t, h, bc, m.GetToken()))
}

// The same token twice in one request is settled once, and every copy gets
// that outcome, here and through another replica.
func TestRepeatedTokenInOneRequestGetsOneOutcome(t *testing.T) {
	h := newHarness(t, withKeys(token.RandomKeyring()))
	h.publish(2)
	resp := h.fetch(h.cons, consumer, 2, time.Second)
	if len(resp.GetMessages()) != 2 {
		t.Fatalf("fetched %d, want 2", len(resp.GetMessages()))
	}
	a, b := resp.GetMessages()[0].GetToken(), resp.GetMessages()[1].GetToken()
	_, other, _ := h.startGateway()
	tp := h.tap()
	wantNoFailures(t, ack(t, h, h.cons, a, a, a))
	wantNoFailures(t, nak(t, h, other, 0, b, b))
	seen := map[string]int{}
	for range 2 {
		seen[string(tp.next(t).Data)]++
	}
	if seen["+ACK"] != 1 || seen["-NAK"] != 1 {
		t.Fatalf("settles on the wire: %v; want one +ACK and one -NAK", seen)
	}
	// A marker settled last, from the same replica: a second copy of either
	// settle would be on the wire before it.
	h.publish(1)
	marker := h.fetch(h.cons, consumer, 1, time.Second).GetMessages()
	if len(marker) != 1 {
		t.Fatalf("marker fetch: %v", marker)
	}
	wantNoFailures(t, ack(t, h, h.cons, marker[0].GetToken()))
	if m := tp.next(t); !strings.HasSuffix(strings.Join(strings.Split(m.Subject, ".")[:6], "."), "."+strconv.FormatUint(marker[0].GetMetadata().GetStreamSeq(), 10)) {
		t.Fatalf("after the two settles the wire shows %s %q, not the marker: a copy was settled again", m.Subject, m.Data)
	}
}
