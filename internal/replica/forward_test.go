package replica

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
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

// A forward that reaches a replica as it shuts down is answered at once,
// ISSUER_GONE, so that the caller acts on the tokens alone instead of
// waiting out its request timeout.
func TestClosingReplicaAnswersForwardsIssuerGone(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	keys := token.RandomKeyring()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := New(ctx, Options{Conn: natstest.Connect(t, ns), Keys: keys, RequestTimeout: time.Second,
		Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing"}}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()

	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	f := settle.Forward{Request: settle.Request{Op: lease.OpAck, Stream: "ORDERS", Consumer: "billing", Tokens: []string{"t1", "t2"}}, Sent: time.Now().UnixMilli(), Nonce: "n"}
	body, _ := json.Marshal(f)
	m := &nats.Msg{Subject: settle.Subject(r.ID()), Reply: inbox, Data: body, Header: nats.Header{}}
	m.Header.Set("Jetgate-Sig", keys.Sign([]byte(m.Subject), body))
	m.Sub = sub // lets Respond publish on nc
	r.onForward(m)
	got, err := sub.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatalf("no answer from the closing replica: %v", err)
	}
	var rep struct {
		Outcomes []struct{ Reason string } `json:"outcomes"`
	}
	if err := json.Unmarshal(got.Data, &rep); err != nil || len(rep.Outcomes) != 2 || rep.Outcomes[0].Reason != "ISSUER_GONE" {
		t.Fatalf("answer %s (%v); want ISSUER_GONE for each token", got.Data, err)
	}
	if !errors.Is(errs.FromReason("ISSUER_GONE"), settle.ErrIssuerGone) {
		t.Fatal("ISSUER_GONE does not read back as settle.ErrIssuerGone")
	}
}
