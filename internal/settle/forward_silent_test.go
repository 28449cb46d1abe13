package settle_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// An issuer that takes a forward and never answers (stopped, frozen by its
// host, starved) is told apart from NATS: the forward fails
// ISSUER_UNAVAILABLE, still an UNAVAILABLE to retry, where it said
// NATS_UNAVAILABLE and fed the alert that NATS is away on a replica whose
// NATS answered all along.
func TestAForwardTheIssuerNeverAnswersIsIssuerUnavailable(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	s := newSender(t, nc, 300*time.Millisecond)
	issuer := token.NewIssuerID()
	subscribe(t, nc, settle.Subject(issuer), func(*nats.Msg) {}) // takes it, answers nothing
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := s.SendForward(ctx, token.RandomKeyring(), issuer, settle.Forward{Request: settle.Request{Op: lease.OpAck, Stream: "ORDERS", Consumer: "billing", Tokens: []string{"t"}}})
	if !errors.Is(err, errs.ErrUnavailable) || errs.Reason(err) != "ISSUER_UNAVAILABLE" {
		t.Fatalf("the forward: %v (reason %s); want ISSUER_UNAVAILABLE, an UNAVAILABLE", err, errs.Reason(err))
	}
}
