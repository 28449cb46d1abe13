package server_test

import (
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

// A subject of the stream that jetgate's own NATS user may not publish to
// (an operator's permissions short of the README's s.>) is the operator's
// to mend: the server answers no request for it, and the caller was told
// UNAVAILABLE "retry" after the request timeout, for ever, or of a batch
// that its stream refused a message for a limit.
func TestAPublishJetgatesNATSUserMayNotMakeSaysSo(t *testing.T) {
	h := newHarness(t)
	g := deniedGateway(t, h)
	want := func(what string, err error) {
		t.Helper()
		code, reason := codeAndReason(err)
		if code != codes.FailedPrecondition || reason != "PUBLISH_REFUSED" || !strings.Contains(err.Error(), `may not publish to "orders.secret"`) {
			t.Errorf("%s: %v; want FAILED_PRECONDITION PUBLISH_REFUSED saying jetgate's NATS user may not publish to orders.secret", what, err)
		}
	}
	_, err := g.Streams.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: stream, Subject: "orders.secret", Data: []byte("x")})
	want("a publish", err)
	for _, at := range []int{0, 1, 2} {
		b := &jetgatev1.PublishBatchRequest{Stream: stream}
		for i := range 3 {
			s := "orders.ok"
			if i == at {
				s = "orders.secret"
			}
			b.Messages = append(b.Messages, &jetgatev1.BatchMessage{Subject: s})
		}
		_, err = g.Streams.PublishBatch(h.ctx(), b)
		want("a batch with orders.secret at "+string(rune('0'+at)), err)
	}
	if _, err := g.Streams.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: stream, Subject: "orders.ok", Data: []byte("x")}); err != nil {
		t.Errorf("a subject the user may publish to: %v", err)
	}
}

// deniedGateway serves ORDERS (allow_atomic) through a NATS user that may
// not publish to orders.secret, with a request timeout of 500ms.
func deniedGateway(t *testing.T, h *harness) *gwtest.Replica {
	t.Helper()
	ns := natstest.StartWith(t, &natsserver.Options{Users: []*natsserver.User{
		{Username: "admin", Password: "a"},
		{Username: "gw", Password: "g", Permissions: &natsserver.Permissions{Publish: &natsserver.SubjectPermission{Deny: []string{"orders.secret"}}}},
	}})
	js, err := jetstream.New(natstest.Connect(t, ns, nats.UserInfo("admin", "a")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(h.ctx(), jetstream.StreamConfig{Name: stream, Subjects: []string{"orders.>"}, AllowAtomicPublish: true}); err != nil {
		t.Fatal(err)
	}
	return gwtest.Start(t, replica.Options{Conn: natstest.Connect(t, ns, nats.UserInfo("gw", "g")), RequestTimeout: 500 * time.Millisecond,
		Consumers: []coreconsumer.Config{{Stream: stream, Name: consumer}}, Keys: token.RandomKeyring()})
}

// A batch whose first message the server never answers waits no longer
// than the request timeout, as any request to NATS (PublishMsgBatch's own
// wait for a first ack was the JetStream context's 5s, whatever the
// caller's deadline; a batch asks no first ack now).
func TestABatchWhoseFirstMessageIsUnansweredWaitsNoLongerThanTheRequestTimeout(t *testing.T) {
	h := newHarness(t)
	g := deniedGateway(t, h)
	b := &jetgatev1.PublishBatchRequest{Stream: stream, Messages: []*jetgatev1.BatchMessage{{Subject: "orders.secret"}, {Subject: "orders.ok"}}}
	start := time.Now()
	_, err := g.Streams.PublishBatch(h.ctx(), b)
	if took := time.Since(start); err == nil || took > 2*time.Second {
		t.Errorf("a batch whose first message got no ack: %v after %v; want an error within the 500ms request timeout (and some slack)", err, took)
	}
}
