package replica_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/roster"
	"github.com/jetgate/jetgate/internal/token"
)

// A replica's consumer hands nothing out before the roster holds the
// replica as serving it, so that a peer telling of a reset waits for it:
// with its roster writes refused (its NATS user may not make them), a Fetch
// gets nothing, and only once the hold gives up (the roster cannot write,
// 5s) does a Fetch get the message.
func TestAConsumerHandsNothingOutBeforeTheRosterHoldsItsReplica(t *testing.T) {
	ns := natstest.StartWith(t, &server.Options{Users: []*server.User{
		{Username: "admin", Password: "admin"},
		{Username: "mute", Password: "mute", Permissions: &server.Permissions{Publish: &server.SubjectPermission{
			Allow: []string{">"}, Deny: []string{"$KV." + roster.Bucket + ".serves.>"},
		}}},
	}})
	connect := func(user string) *nats.Conn {
		nc, err := nats.Connect(fmt.Sprintf("nats://%s:%s@%s", user, user, strings.TrimPrefix(ns.ClientURL(), "nats://")),
			nats.ReconnectBufSize(-1), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	admin := connect("admin")
	natstest.Stream(t, admin, "ORDERS", "orders.>")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := replica.New(ctx, replica.Options{Conn: connect("mute"), Keys: token.RandomKeyring(), RequestTimeout: 2 * time.Second,
		Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing", AckWait: 30 * time.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	js, err := jetstream.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	seq, err := js.Publish(ctx, "orders.1", []byte("m"))
	if err != nil {
		t.Fatal(err)
	}

	fctx, fcancel := context.WithTimeout(ctx, time.Second)
	res, err := r.Fetch(fctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: 500 * time.Millisecond})
	fcancel()
	if err == nil && len(res.Messages) > 0 {
		t.Fatal("a Fetch got the message before the roster held the replica as serving billing")
	}
	res, err = r.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: 20 * time.Second})
	if err != nil || len(res.Messages) != 1 || res.Messages[0].Meta.StreamSeq != seq.Sequence {
		t.Fatalf("once the hold gave up: %v %v; want the message", res, err)
	}
}
