package replica_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/natsname"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// lockTimeout is the request timeout of the replicas below: their holds
// last 2s unless let go.
const lockTimeout = time.Second

// twoAdminReplicas starts two replicas that let callers make consumers
// team-* on ORDERS, and makes team-a through the second, whose NATS
// connection it returns too.
func twoAdminReplicas(t *testing.T) (a, b *replica.Replica, bConn *nats.Conn, srv *server.Server, ctx context.Context) {
	t.Helper()
	srv = natstest.Start(t)
	natstest.Stream(t, natstest.Connect(t, srv), "ORDERS", "orders.>")
	keys := token.RandomKeyring()
	admin := &consumer.Admin{Streams: []string{"ORDERS"}, Consumers: []string{"team-*"}}
	a = replicaOf(t, srv, keys, replica.Options{Admin: admin, RequestTimeout: lockTimeout})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	bConn = natstest.Connect(t, srv)
	b, err := replica.New(ctx, replica.Options{Admin: admin, RequestTimeout: lockTimeout, Conn: bConn, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close) // before its connection closes
	if _, err := b.CreateConsumer(ctx, "", "ORDERS", jetstream.ConsumerConfig{Durable: "team-a", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	return a, b, bConn, srv, ctx
}

func describe(d string) func(*jetstream.ConsumerConfig) error {
	return func(c *jetstream.ConsumerConfig) error {
		c.Description = d
		return nil
	}
}

// A replica that stopped while it held a consumer for a change (its
// process killed between the hold and the letting go) holds up the next
// change of that consumer through another replica no longer than the
// hold's TTL: that change waits, then is made.
func TestAHoldWhoseReplicaStoppedLapses(t *testing.T) {
	a, b, _, _, ctx := twoAdminReplicas(t)
	ttl := replica.LockTTL(lockTimeout)
	if err := a.HoldForTest(ctx, "ORDERS", "team-a", ttl); err != nil {
		t.Fatal(err)
	}
	held := time.Now()
	a.Close()
	ci, err := b.UpdateConsumer(ctx, "", "ORDERS", "team-a", describe("after the crash"))
	waited := time.Since(held)
	t.Logf("the change after a hold of %v whose replica stopped waited %v", ttl, waited)
	if err != nil {
		t.Fatalf("the change after a stopped replica's hold: %v", err)
	}
	if ci.Config.Description != "after the crash" {
		t.Errorf("description %q after the update", ci.Config.Description)
	}
	if waited < ttl/2 || waited > ttl+2*time.Second {
		t.Errorf("the change waited %v for a hold of %v whose replica stopped; want about the hold's TTL, at most %v", waited, ttl, ttl+2*time.Second)
	}
}

// A consumer held longer than a change waits (here by a hold of a minute)
// is not changed: the caller is told CONSUMER_BUSY, retryable, and why.
func TestAChangeOfAConsumerHeldTooLongIsBusy(t *testing.T) {
	a, b, _, srv, ctx := twoAdminReplicas(t)
	if err := a.HoldForTest(ctx, "ORDERS", "team-a", time.Minute); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := b.UpdateConsumer(ctx, "", "ORDERS", "team-a", describe("never"))
	t.Logf("refused after %v: %v", time.Since(start), err)
	if !errors.Is(err, errs.ErrConsumerBusy) || !strings.Contains(err.Error(), "retry") || !strings.Contains(err.Error(), `"team-a"`) {
		t.Fatalf("update of a consumer held for a minute: %v; want CONSUMER_BUSY naming it and saying to retry", err)
	}
	js, _ := jetstream.New(natstest.Connect(t, srv))
	if c, err := js.Consumer(ctx, "ORDERS", "team-a"); err != nil || c.CachedInfo().Config.Description != "" {
		t.Fatalf("the consumer after the refused update: %v", err)
	}
}

// What an update costs in NATS requests, with nobody else changing the
// consumer: its hold (a create of the key; over the marker of a hold let
// go within the last second, a create that fails, a get and a create
// again), the consumer's and the stream's info, the write, and the
// letting go (a purge).
func TestTheRequestsOfAnUpdate(t *testing.T) {
	_, b, bConn, srv, ctx := twoAdminReplicas(t)
	nc := natstest.Connect(t, srv)
	// A channel subscription: nats.go puts each message on the channel as
	// it reads it, before the PONG behind it ends a Flush (an async
	// handler may run after, and count a request in the next update's).
	// Room for the polls of the marker below too (100 a second, for at
	// most 10s): a full channel drops what comes.
	heard := make(chan *nats.Msg, 4096)
	for _, subject := range []string{"$JS.API.>", "$KV.>"} {
		if _, err := nc.ChanSubscribe(subject, heard); err != nil {
			t.Fatal(err)
		}
	}
	// heardSoFar counts the requests b sent before it was called, by kind:
	// the server passed each on to nc before it read b's PING, and so
	// before nc's.
	heardSoFar := func() (int, map[string]int) {
		for _, c := range []*nats.Conn{bConn, nc} {
			if err := c.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		kinds := make(map[string]int)
		for n := 0; ; n++ {
			select {
			case m := <-heard:
				tokens := strings.Split(m.Subject, ".")
				kinds[strings.Join(tokens[:min(len(tokens), 4)], ".")]++
			default:
				return n, kinds
			}
		}
	}
	cost := func(d string) (int, map[string]int) {
		heardSoFar() // not this update's
		if _, err := b.UpdateConsumer(ctx, "", "ORDERS", "team-a", describe(d)); err != nil {
			t.Fatal(err)
		}
		return heardSoFar()
	}
	// Within a second of the create, whose hold's marker is still there.
	n, got := cost("first")
	t.Logf("an update just after the create: %d requests %v", n, got)
	n, got = cost("second")
	t.Logf("an update within a second of the last: %d requests %v", n, got)
	if n > 7 {
		t.Errorf("an update within a second of the last: %d requests %v; want 7", n, got)
	}
	js, _ := jetstream.New(nc)
	kv, err := js.Stream(ctx, "KV_"+settle.LedgerBucket)
	if err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 10*time.Second, "the marker of the last hold gone", func() bool {
		_, err := kv.GetLastMsgForSubject(ctx, "$KV."+settle.LedgerBucket+"."+natsname.Key("ORDERS", "team-a")+".lock")
		return errors.Is(err, jetstream.ErrMsgNotFound)
	})
	n, got = cost("third")
	t.Logf("an update: %d requests %v", n, got)
	if n > 5 {
		t.Errorf("an update: %d requests %v; want 5: hold, consumer info, stream info, write, let go", n, got)
	}
}
