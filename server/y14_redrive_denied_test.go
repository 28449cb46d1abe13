package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

// A Redrive of a dead letter whose original subject jetgate's own NATS
// user may not publish to: the server answers the republish with no reply,
// only an async -ERR naming the subject, and the Redrive waited the whole
// request timeout (here 20s). The -ERR, handed to the replica as the app's
// error handler does, ends the republish at once: the letter stays, a
// failure PUBLISH_REFUSED saying that jetgate's NATS user may not publish
// to its subject. Each call here has 5s: answered within them, or it failed
// DEADLINE_EXCEEDED, as before the mend.
func TestY14ARedriveToASubjectJetgatesNATSUserMayNotPublishToIsRefusedAtOnce(t *testing.T) {
	h := newHarness(t)
	ns := natstest.StartWith(t, &natsserver.Options{Users: []*natsserver.User{
		{Username: "admin", Password: "a"},
		{Username: "gw", Password: "g", Permissions: &natsserver.Permissions{Publish: &natsserver.SubjectPermission{Deny: []string{"orders.secret"}}}},
	}})
	admin := natstest.Connect(t, ns, nats.UserInfo("admin", "a"))
	natstest.Stream(t, admin, stream, "orders.>")
	natstest.Stream(t, admin, "DLQ", "dlq.>")
	js, err := jetstream.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	nc := natstest.Connect(t, ns, nats.UserInfo("gw", "g"))
	g := gwtest.Start(t, replica.Options{Conn: nc, RequestTimeout: 20 * time.Second, Keys: token.RandomKeyring(),
		Consumers: []coreconsumer.Config{{Stream: stream, Name: consumer, DeadLetter: &coreconsumer.DeadLetter{Subject: dlqSubject, OnTerm: true}}}})
	nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { g.AsyncError(err) })

	if _, err := js.Publish(h.ctx(), "orders.secret", []byte("bad")); err != nil {
		t.Fatal(err)
	}
	ms := fetchVia(t, g.Consumers, 1, 5*time.Second)
	if resp, err := g.Consumers.Term(h.ctx(), &jetgatev1.TermRequest{Stream: stream, Consumer: consumer, Tokens: []string{ms[0].GetToken()}}); err != nil || len(resp.GetFailures()) != 0 {
		t.Fatalf("term: %v %v", resp, err)
	}
	letters := func() []*jetstream.RawStreamMsg { return natstest.StreamMsgs(t, js, "DLQ", dlqSubject) }
	natstest.Eventually(t, 15*time.Second, "the dead letter", func() bool { return len(letters()) == 1 })
	seq := letters()[0].Sequence

	for what, seqs := range map[string][]uint64{"named": {seq}, "all": nil} {
		ctx, cancel := context.WithTimeout(h.ctx(), 5*time.Second)
		resp, err := g.Consumers.Redrive(ctx, &jetgatev1.RedriveRequest{Stream: stream, Consumer: consumer, Seqs: seqs})
		cancel()
		if err != nil {
			t.Fatalf("redrive (%s): %v; want an answer before the 20s request timeout", what, err)
		}
		fs := resp.GetFailures()
		if resp.GetRedriven() != 0 || len(fs) != 1 || fs[0].GetSeq() != seq || codes.Code(fs[0].GetCode()) != codes.FailedPrecondition ||
			fs[0].GetReason() != "PUBLISH_REFUSED" || !strings.Contains(fs[0].GetMessage(), `NATS user may not publish to "orders.secret"`) {
			t.Fatalf("redrive (%s): %v; want letter %d to fail PUBLISH_REFUSED saying jetgate's NATS user may not publish to orders.secret", what, resp, seq)
		}
		if strings.Contains(fs[0].GetMessage(), "$JS") || strings.Contains(fs[0].GetMessage(), "_INBOX") {
			t.Errorf("redrive (%s): %q names a NATS subject the caller did not send", what, fs[0].GetMessage())
		}
	}
	if n := len(letters()); n != 1 {
		t.Fatalf("%d dead letters left; want the refused one to stay", n)
	}
}
