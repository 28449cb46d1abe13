package server_test

import (
	"context"
	"strings"
	"sync"
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

// A publish to a subject jetgate's own NATS user may not publish to is
// answered by the server with an async -ERR naming the subject, and by no
// reply: the caller waited the whole request timeout (here 20s) to be told
// PUBLISH_REFUSED. The connection's error handler hands that -ERR to the
// replica (as the app's does), which ends at once every publish waiting on
// the subject. Each call here has 5s: answered within them, or it failed
// DEADLINE_EXCEEDED, as before the mend.
func TestY12APublishJetgatesNATSUserMayNotMakeIsRefusedAtOnce(t *testing.T) {
	h := newHarness(t)
	g, nc := y12DeniedGateway(t, h, 20*time.Second)
	nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { g.AsyncError(err) })
	want := func(what string, err error) {
		t.Helper()
		code, reason := codeAndReason(err)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if code != codes.FailedPrecondition || reason != "PUBLISH_REFUSED" || !strings.Contains(msg, `may not publish to "orders.secret"`) {
			t.Errorf("%s: %v; want FAILED_PRECONDITION PUBLISH_REFUSED saying jetgate's NATS user may not publish to orders.secret, before the 20s request timeout", what, err)
		}
		if strings.Contains(msg, "$JS") || strings.Contains(msg, "_INBOX") {
			t.Errorf("%s: %v; names a NATS subject the caller did not send", what, err)
		}
	}
	call := func() context.Context {
		ctx, cancel := context.WithTimeout(h.ctx(), 5*time.Second)
		t.Cleanup(cancel)
		return ctx
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = g.Streams.Publish(call(), &jetgatev1.PublishRequest{Stream: stream, Subject: "orders.secret", Data: []byte("x")})
		})
	}
	wg.Wait()
	for _, err := range errs {
		want("one of 3 publishes at once", err)
	}
	for _, at := range []int{0, 1, 2} {
		b := &jetgatev1.PublishBatchRequest{Stream: stream}
		for i := range 3 {
			s := "orders.ok"
			if i == at {
				s = "orders.secret"
			}
			b.Messages = append(b.Messages, &jetgatev1.BatchMessage{Subject: s})
		}
		_, err := g.Streams.PublishBatch(call(), b)
		want("a batch with orders.secret at "+string(rune('0'+at)), err)
	}
	if _, err := g.Streams.Publish(call(), &jetgatev1.PublishRequest{Stream: stream, Subject: "orders.ok", Data: []byte("x")}); err != nil {
		t.Errorf("a subject the user may publish to: %v", err)
	}
}

// y12DeniedGateway serves ORDERS (allow_atomic) through a NATS user that
// may not publish to orders.secret, with the given request timeout; it
// returns the replica's connection too.
func y12DeniedGateway(t *testing.T, h *harness, timeout time.Duration) (*gwtest.Replica, *nats.Conn) {
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
	nc := natstest.Connect(t, ns, nats.UserInfo("gw", "g"))
	return gwtest.Start(t, replica.Options{Conn: nc, RequestTimeout: timeout,
		Consumers: []coreconsumer.Config{{Stream: stream, Name: consumer}}, Keys: token.RandomKeyring()}), nc
}
