package app

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// A publish to a subject of the stream that jetgate's own NATS user may not
// publish to got no answer from the server, only an async -ERR naming the
// subject: the caller waited the request timeout (5s) for PUBLISH_REFUSED.
// The connection's error handler now ends the publishes waiting on that
// subject at once. Each call here has 3s, short of the request timeout.
func TestY12APublishJetgatesNATSUserMayNotMakeIsRefusedAtOnce(t *testing.T) {
	denied := *jetgateUser
	denied.Publish = &natsserver.SubjectPermission{Allow: jetgateUser.Publish.Allow, Deny: []string{"orders.secret"}}
	ns := natstest.StartWith(t, &natsserver.Options{Users: []*natsserver.User{
		{Username: "admin", Password: "admin"},
		{Username: "jetgate", Password: "s3cret", Permissions: &denied},
	}})
	url := func(user, pass string) string {
		return fmt.Sprintf("nats://%s:%s@%s", user, pass, strings.TrimPrefix(ns.ClientURL(), "nats://"))
	}
	js, err := jetstream.New(natstest.Connect(t, ns, nats.UserInfo("admin", "admin")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctxT(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, AllowAtomicPublish: true}); err != nil {
		t.Fatal(err)
	}
	o := testOptions(t)
	o.NATSURL = url("jetgate", "s3cret")
	p := start(t, o)
	_, sc := grpcClients(t, p.GRPC)
	call := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		t.Cleanup(cancel)
		return ctx
	}
	want := func(what string, err error) {
		t.Helper()
		if status.Code(err) != codes.FailedPrecondition || reasonOf(err) != "PUBLISH_REFUSED" ||
			!strings.Contains(status.Convert(err).Message(), `may not publish to "orders.secret"`) {
			t.Errorf("%s: %v; want FAILED_PRECONDITION PUBLISH_REFUSED saying jetgate's NATS user may not publish to orders.secret, before the request timeout", what, err)
		}
	}
	_, err = sc.Publish(call(), &jetgatev1.PublishRequest{Stream: "ORDERS", Subject: "orders.secret", Data: []byte("x")})
	want("a publish", err)
	_, err = sc.PublishBatch(call(), &jetgatev1.PublishBatchRequest{Stream: "ORDERS", Messages: []*jetgatev1.BatchMessage{
		{Subject: "orders.secret"}, {Subject: "orders.ok"}}})
	want("a batch beginning with it", err)
	publish(t, sc, "orders.ok", "x")
}
