package server_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/auth"
	"github.com/jetgate/jetgate/internal/authtest"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
	"github.com/jetgate/jetgate/server"
)

// A token is bound to the principal it was issued to, whichever replica it
// is settled through: bob, who may fetch and settle the same consumer,
// cannot Ack or Nak alice's lease through a replica that did not issue it,
// neither while the issuer is up (the settle would be forwarded to it) nor
// once it is gone (the replica would adopt the lease from the token alone).
// Nothing reaches the server for his tries, and alice's own settles through
// that replica still succeed.
func TestAnotherPrincipalCannotSettleThroughAnotherReplica(t *testing.T) {
	for _, tt := range []struct {
		name       string
		issuerGone bool
	}{
		{"issuer up, settle forwarded", false},
		{"issuer gone, lease adopted", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, keys, r1, r2 := twoGuardedReplicas(t)
			seqs := h.publish(2)
			msgs := fetchAs(t, h, r1.Consumers, alice, 2, time.Second)
			if len(msgs) != 2 {
				t.Fatalf("alice's fetch at replica 1: %d messages, want 2", len(msgs))
			}
			toAck, toNak := msgs[0].GetToken(), msgs[1].GetToken()
			if tt.issuerGone {
				r1.Stop()
			}

			// Bob's tries through replica 2 fail for the token, on their own.
			wantWrongPrincipal(t, settleAs(t, h, r2.Consumers, bob, lease.OpAck, toAck))
			wantWrongPrincipal(t, settleAs(t, h, r2.Consumers, bob, lease.OpNak, toNak))
			if !tt.issuerGone {
				// The issuer checks the principal of a forwarded settle too,
				// not only the replica it came through.
				wantIssuerRefusesBob(t, h, keys, r1.ID(), toAck)
			}
			// Settles are confirmed by the server before they are reported, so
			// had bob's Ack been sent, the consumer would show it now; had his
			// Nak been, the message would be handed out again at once.
			if ci := h.info(consumer); ci.NumAckPending != 2 || ci.AckFloor.Stream != 0 {
				t.Fatalf("after bob's refused settles: ack pending %d, ack floor %d; want 2, 0", ci.NumAckPending, ci.AckFloor.Stream)
			}
			if more := fetchAs(t, h, r2.Consumers, alice, 1, 500*time.Millisecond); len(more) != 0 {
				t.Fatalf("redelivered before alice's lease ended, after bob's refused Nak: %v", more)
			}

			// Alice's own settles of the same tokens through replica 2 succeed.
			wantNoFailures(t, settleAs(t, h, r2.Consumers, alice, lease.OpAck, toAck))
			natstest.Eventually(t, 5*time.Second, "the ack floor reaches alice's acked message", func() bool {
				return h.info(consumer).AckFloor.Stream == seqs[0]
			})
			wantNoFailures(t, settleAs(t, h, r2.Consumers, alice, lease.OpNak, toNak))
			again := fetchAs(t, h, r2.Consumers, alice, 1, 5*time.Second)
			if len(again) != 1 || again[0].GetMetadata().GetStreamSeq() != seqs[1] || again[0].GetMetadata().GetNumDelivered() != 2 {
				t.Fatalf("after alice's Nak: %v; want message %d delivered a second time", again, seqs[1])
			}
			wantNoFailures(t, settleAs(t, h, r2.Consumers, alice, lease.OpAck, again[0].GetToken()))
			natstest.Eventually(t, 5*time.Second, "both messages acked", func() bool {
				ci := h.info(consumer)
				return ci.NumAckPending == 0 && ci.AckFloor.Stream == seqs[1]
			})
		})
	}
}

// A principal and its API key.
type principal struct{ name, key string }

var (
	alice = principal{"alice", "alice-key"}
	bob   = principal{"bob", "bob-key"}
)

func (p principal) ctx(h *harness) context.Context {
	return as(h.ctx(), "authorization", "Bearer "+p.key)
}

// twoGuardedReplicas starts two replicas behind the guard, sharing one
// keyring, on the harness's server (whose own replica has another key and
// serves no call here). alice and bob may both fetch and settle the
// consumer.
func twoGuardedReplicas(t *testing.T) (*harness, *token.Keyring, *gwtest.Replica, *gwtest.Replica) {
	t.Helper()
	h := newHarness(t)
	var keys []auth.APIKey
	var grants []auth.Grant
	for _, p := range []principal{alice, bob} {
		keys = append(keys, auth.APIKey{Principal: p.name, SHA256: authtest.KeyHash(p.key)})
		grants = append(grants, auth.Grant{Principal: p.name, Stream: stream, Consumers: []string{consumer},
			Actions: []auth.Action{auth.ActionFetch, auth.ActionSettle}})
	}
	a, err := auth.New(auth.Config{APIKeys: keys, Grants: grants})
	if err != nil {
		t.Fatal(err)
	}
	ring := token.RandomKeyring()
	start := func() *gwtest.Replica {
		g := server.NewGuard(a, quietLog(), nil)
		return gwtest.Start(t, replica.Options{
			Conn: natstest.Connect(t, h.ns),
			Consumers: []coreconsumer.Config{
				{Stream: stream, Name: consumer, AckWait: h.cfg.ackWait, MaxAckPending: h.cfg.maxAckPending},
			},
			Keys: ring,
		}, grpc.ChainUnaryInterceptor(g.Unary()), grpc.ChainStreamInterceptor(g.Stream()))
	}
	r1, r2 := start(), start()
	if r1.ID() == r2.ID() {
		t.Fatal("two replicas share an id")
	}
	return h, ring, r1, r2
}

func fetchAs(t *testing.T, h *harness, c jetgatev1.ConsumerServiceClient, p principal, batch int32, expires time.Duration) []*jetgatev1.Message {
	t.Helper()
	resp, err := c.Fetch(p.ctx(h), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: batch, Expires: durationpb.New(expires)})
	if err != nil {
		t.Fatalf("%s's fetch: %v", p.name, err)
	}
	return resp.GetMessages()
}

// settleAs acks or naks (at once) tokens as p and returns the failures.
func settleAs(t *testing.T, h *harness, c jetgatev1.ConsumerServiceClient, p principal, op lease.Op, tokens ...string) []*jetgatev1.TokenFailure {
	t.Helper()
	var fails []*jetgatev1.TokenFailure
	var err error
	switch op {
	case lease.OpAck:
		var resp *jetgatev1.AckResponse
		resp, err = c.Ack(p.ctx(h), &jetgatev1.AckRequest{Stream: stream, Consumer: consumer, Tokens: tokens})
		fails = resp.GetFailures()
	case lease.OpNak:
		var resp *jetgatev1.NakResponse
		resp, err = c.Nak(p.ctx(h), &jetgatev1.NakRequest{Stream: stream, Consumer: consumer, Tokens: tokens})
		fails = resp.GetFailures()
	default:
		t.Fatalf("settleAs: op %v", op)
	}
	if err != nil {
		t.Fatalf("%s's %v: %v", p.name, op, err)
	}
	return fails
}

// wantWrongPrincipal expects the one token of a settle to have failed as
// another principal's: PERMISSION_DENIED, TOKEN_WRONG_PRINCIPAL.
func wantWrongPrincipal(t *testing.T, fs []*jetgatev1.TokenFailure) {
	t.Helper()
	if len(fs) != 1 {
		t.Errorf("bob's settle of alice's token: %d failures %v; want 1 (TOKEN_WRONG_PRINCIPAL)", len(fs), fs)
		return
	}
	f := fs[0]
	if f.GetIndex() != 0 || f.GetCode() != int32(codes.PermissionDenied) || f.GetReason() != "TOKEN_WRONG_PRINCIPAL" {
		t.Errorf("bob's settle of alice's token: index %d code %v reason %q (%s); want 0 PermissionDenied TOKEN_WRONG_PRINCIPAL",
			f.GetIndex(), codes.Code(f.GetCode()), f.GetReason(), f.GetMessage())
	}
}

// wantIssuerRefusesBob sends the issuer a settle of alice's token, signed
// as replicas sign them, in bob's name: the issuer refuses it on its own.
func wantIssuerRefusesBob(t *testing.T, h *harness, keys *token.Keyring, issuer token.IssuerID, tok string) {
	t.Helper()
	s, err := settle.NewSender(h.nc, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	out, err := s.SendForward(h.ctx(), keys, issuer, settle.Forward{Request: settle.Request{
		Op: lease.OpAck, Stream: stream, Consumer: consumer, Tokens: []string{tok}, Principal: bob.name,
	}})
	if err != nil || len(out) != 1 || !errors.Is(out[0].Err, errs.ErrTokenWrongPrincipal) {
		t.Errorf("a forwarded Ack of alice's token in bob's name: %v %v; want TOKEN_WRONG_PRINCIPAL", out, err)
	}
}
