package app

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// The NATS permissions the README's "NATS permissions" section documents
// for jetgate's user, for stream ORDERS (orders.>) and consumer billing.
var jetgateUser = &natsserver.Permissions{
	Publish: &natsserver.SubjectPermission{Allow: []string{
		"$JS.API.INFO",
		"$JS.API.STREAM.INFO.ORDERS",
		"$JS.API.CONSUMER.CREATE.ORDERS.>",
		"$JS.API.CONSUMER.INFO.ORDERS.billing",
		"$JS.API.CONSUMER.MSG.NEXT.ORDERS.billing",
		"$JS.API.STREAM.MSG.GET.ORDERS",
		"$JS.API.DIRECT.GET.ORDERS.>",
		"$JS.ACK.ORDERS.billing.>",
		"$JS.API.STREAM.INFO.KV_jetgate_settles",
		"$JS.API.STREAM.CREATE.KV_jetgate_settles",
		"$JS.API.STREAM.UPDATE.KV_jetgate_settles",
		"$JS.API.DIRECT.GET.KV_jetgate_settles.>",
		"$JS.API.STREAM.MSG.GET.KV_jetgate_settles",
		"$KV.jetgate_settles.>",
		"$JS.API.STREAM.INFO.KV_jetgate_members",
		"$JS.API.STREAM.CREATE.KV_jetgate_members",
		"$JS.API.STREAM.UPDATE.KV_jetgate_members",
		"$JS.API.CONSUMER.CREATE.KV_jetgate_members.>",
		"$JS.API.CONSUMER.DELETE.KV_jetgate_members.>",
		"$JS.FC.KV_jetgate_members.>",
		"$KV.jetgate_members.>",
		"_JETGATE.SETTLE.*",
		"$JS.API.CONSUMER.LIST.ORDERS",
		"_JETGATE.RESET.>",
		"_JETGATE.KEYCHECK",
		"_INBOX.>",
		"orders.>",
	}},
	Subscribe: &natsserver.SubjectPermission{Allow: []string{"_INBOX.>", "_JETGATE.SETTLE.*", "_JETGATE.RESET.>", "_JETGATE.KEYCHECK",
		"$JS.API.CONSUMER.RESET.>", "$JS.API.CONSUMER.CREATE.>", "$JS.API.CONSUMER.DURABLE.CREATE.>",
		"$JS.EVENT.ADVISORY.CONSUMER.PAUSE.>", "$JS.EVENT.ADVISORY.CONSUMER.DELETED.>", "$JS.EVENT.ADVISORY.CONSUMER.LEADER_ELECTED.>"}},
}

// What every other user of the account is denied.
var otherUser = &natsserver.Permissions{
	Publish: &natsserver.SubjectPermission{Deny: []string{
		"_JETGATE.>", "$KV.jetgate_settles.>", "$JS.API.*.*.KV_jetgate_settles", "$JS.API.*.*.KV_jetgate_settles.>",
		"$JS.API.STREAM.*.KV_jetgate_settles",
		"$KV.jetgate_members.>", "$JS.API.STREAM.*.KV_jetgate_members",
	}},
	Subscribe: &natsserver.SubjectPermission{Deny: []string{"_JETGATE.>", "$KV.jetgate_settles.>"}},
}

// jetgate runs under exactly the documented permissions: two replicas
// publish, fetch, forward settles to each other, and settle from the ledger
// once the issuer is gone. Another user cannot listen to the forwards.
func TestRunsUnderTheDocumentedNATSPermissions(t *testing.T) {
	ns := natstest.StartWith(t, &natsserver.Options{
		Users: []*natsserver.User{
			{Username: "admin", Password: "admin"},
			{Username: "jetgate", Password: "s3cret", Permissions: jetgateUser},
			{Username: "other", Password: "other", Permissions: otherUser},
		},
	})
	url := func(user, pass string) string {
		return fmt.Sprintf("nats://%s:%s@%s", user, pass, strings.TrimPrefix(ns.ClientURL(), "nats://"))
	}
	admin, err := nats.Connect(url("admin", "admin"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	js, _ := jetstream.New(admin)
	if _, err := js.CreateStream(ctxT(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}

	keyFile := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keyFile, []byte("a shared secret of at least thirty-two bytes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	replica := func(logs io.Writer) *Process {
		o := testOptions(t)
		o.NATSURL, o.TokenKeyFile = url("jetgate", "s3cret"), keyFile
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
		return start(t, o)
	}
	var bLogs syncBuffer
	a, b := replica(io.Discard), replica(&bLogs)
	natstest.Eventually(t, 10*time.Second, "the token key check of b finds a", func() bool {
		return bLogs.count("token key check", "peers=1") == 1
	})
	ca, sa := grpcClients(t, a.GRPC)
	cb, _ := grpcClients(t, b.GRPC)

	for i := range 3 {
		publish(t, sa, "orders.perm", fmt.Sprint(i))
	}
	msgs := fetch(t, ca, "billing", 3, 5*time.Second)
	if len(msgs) != 3 {
		t.Fatalf("fetched %d, want 3", len(msgs))
	}
	settle := func(c jetgatev1.ConsumerServiceClient, what string, call func() ([]*jetgatev1.TokenFailure, error)) {
		t.Helper()
		fs, err := call()
		if err != nil || len(fs) != 0 {
			t.Fatalf("%s: %v %v", what, fs, err)
		}
	}
	req := func(m *jetgatev1.Message) *jetgatev1.AckRequest {
		return &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "billing", Tokens: []string{m.GetToken()}}
	}
	settle(cb, "ack forwarded to the issuer", func() ([]*jetgatev1.TokenFailure, error) {
		r, err := cb.Ack(ctxT(t), req(msgs[0]))
		return r.GetFailures(), err
	})
	settle(cb, "extend forwarded", func() ([]*jetgatev1.TokenFailure, error) {
		r, err := cb.Extend(ctxT(t), &jetgatev1.ExtendRequest{Stream: "ORDERS", Consumer: "billing", Tokens: []string{msgs[1].GetToken()}})
		return r.GetFailures(), err
	})
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	settle(cb, "nak with the issuer gone (ledger)", func() ([]*jetgatev1.TokenFailure, error) {
		r, err := cb.Nak(ctxT(t), &jetgatev1.NakRequest{Stream: "ORDERS", Consumer: "billing", Tokens: []string{msgs[1].GetToken()}})
		return r.GetFailures(), err
	})
	settle(cb, "ack with the issuer gone (ledger)", func() ([]*jetgatev1.TokenFailure, error) {
		r, err := cb.Ack(ctxT(t), req(msgs[2]))
		return r.GetFailures(), err
	})
	again := fetch(t, cb, "billing", 1, 5*time.Second)
	if len(again) != 1 || again[0].GetMetadata().GetNumDelivered() != 2 {
		t.Fatalf("the nak'ed message: %v", again)
	}
	if _, err := cb.GetConsumer(ctxT(t), &jetgatev1.GetConsumerRequest{Stream: "ORDERS", Consumer: "billing"}); err != nil {
		t.Fatalf("GetConsumer: %v", err)
	}

	violations := make(chan error, 4)
	other, err := nats.Connect(url("other", "other"), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		violations <- err
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	if _, err := other.SubscribeSync("_JETGATE.SETTLE.*"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-violations:
		if !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
			t.Fatalf("other user's subscription: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("another user could listen to forwarded settles")
	}
}
