package replica

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// What passes while JetStream is out of a replica's reach goes unheard:
// its connection dropped, or, with the connection up, the link of its leaf
// node to the hub. Either way the replica reads the consumer's info and the
// ledger's record of its resets before its next settle (consumer/reconnect.go).

// billingOn is a replica on conn serving ORDERS' billing (ack_wait 1m)
// through domain ("" none).
func billingOn(t *testing.T, conn *nats.Conn, keys *token.Keyring, domain string) *Replica {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := New(ctx, Options{Conn: conn, Keys: keys, Domain: domain, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing", AckWait: time.Minute}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// fetchN leases n messages of billing through r.
func fetchN(t *testing.T, ctx context.Context, r *Replica, n int) []*consumer.Delivery {
	t.Helper()
	res, err := r.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: n, Expires: 5 * time.Second})
	if err != nil || len(res.Messages) != n {
		t.Fatalf("fetch %d: %+v %v", n, res, err)
	}
	return res.Messages
}

// ackOnceBack acks d through r once r's NATS is back (UNAVAILABLE until
// then) and returns its outcome.
func ackOnceBack(t *testing.T, ctx context.Context, r *Replica, d *consumer.Delivery) error {
	t.Helper()
	var out []settle.Outcome
	var err error
	natstest.Eventually(t, 10*time.Second, "the Ack answered", func() bool {
		out, err = r.Settle(ctx, settle.Request{Op: lease.OpAck, Stream: "ORDERS", Consumer: "billing", Tokens: []string{d.Token}})
		return err == nil && !errors.Is(out[0].Err, errs.ErrUnavailable)
	})
	return out[0].Err
}

// cutLeaf cuts the leaf's link to the hub and waits until r, on the leaf,
// has found JetStream out of its reach: a roster write unanswered, within
// a renewal or two (the spell's start, however short, is what it cannot
// see).
func cutLeaf(t *testing.T, link *natstest.Proxy, hubLeaves func() int, r *Replica) (noticed func()) {
	t.Helper()
	before := r.relay.reconnects.Load()
	link.Cut()
	natstest.Eventually(t, 10*time.Second, "the link down", func() bool { return hubLeaves() == 0 })
	return func() {
		natstest.Eventually(t, 20*time.Second, "the leaf's replica found JetStream out of reach", func() bool {
			return r.relay.reconnects.Load() > before
		})
	}
}

// A hub client deletes and makes the consumer again while the leaf's link
// is down, and holds the new consumer's delivery of the message the leaf's
// replica holds a lease of: the delete advisory never crossed. Once the
// link is back, the old lease settles nothing of the new consumer's.
func TestAConsumerRemadeWhileTheLeafLinkWasDownSettlesNothingOfIt(t *testing.T) {
	hub, leaf, link := natstest.StartHubAndLinkedLeaf(t, "hub", "leaf")
	hc := natstest.Connect(t, hub)
	natstest.Stream(t, hc, "ORDERS", "orders.>")
	r := billingOn(t, natstest.Connect(t, leaf), token.RandomKeyring(), "hub")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hjs, _ := jetstream.New(hc)
	if _, err := hjs.Publish(ctx, "orders.1", []byte("m")); err != nil {
		t.Fatal(err)
	}
	held := fetchN(t, ctx, r, 1)[0]
	noticed := cutLeaf(t, link, hub.NumLeafNodes, r)
	if err := hjs.DeleteConsumer(ctx, "ORDERS", "billing"); err != nil {
		t.Fatal(err)
	}
	c, err := hjs.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(collect(b.Messages())); n != 1 {
		t.Fatalf("the hub client fetched %d", n)
	}
	noticed()
	link.Mend()
	if err := ackOnceBack(t, ctx, r, held); err == nil {
		t.Fatal("the Ack of a lease of the consumer deleted since succeeded")
	}
	if ci, err := c.Info(ctx); err != nil || ci.NumAckPending != 1 {
		t.Fatalf("the new consumer's info: %+v %v; want the hub client's delivery pending", ci, err)
	}
}

func collect(ms <-chan jetstream.Msg) []jetstream.Msg {
	var out []jetstream.Msg
	for m := range ms {
		out = append(out, m)
	}
	return out
}

// A replica on the hub Seeks while the leaf's link is down (its word to
// the leaf's replica goes unanswered) and hands the message out again,
// delivered once, as the lease the leaf's replica holds was: the info
// counts as many deliveries as before. The reset's record in the ledger,
// written since the leaf's replica bound, voids the lease.
func TestASeekWhileTheLeafLinkWasDownVoidsTheLeafReplicasLeases(t *testing.T) {
	hub, leaf, link := natstest.StartHubAndLinkedLeaf(t, "hub", "leaf")
	hc := natstest.Connect(t, hub)
	natstest.Stream(t, hc, "ORDERS", "orders.>")
	keys := token.RandomKeyring()
	rh := billingOn(t, natstest.Connect(t, hub), keys, "hub")
	rl := billingOn(t, natstest.Connect(t, leaf), keys, "hub")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hjs, _ := jetstream.New(hc)
	if _, err := hjs.Publish(ctx, "orders.1", []byte("m")); err != nil {
		t.Fatal(err)
	}
	held := fetchN(t, ctx, rl, 1)[0]
	noticed := cutLeaf(t, link, hub.NumLeafNodes, rl)
	if _, err := rh.Seek(ctx, "ORDERS", "billing", SeekTarget{Seq: 1}); err != nil {
		t.Fatal(err)
	}
	fetchN(t, ctx, rh, 1)
	noticed()
	link.Mend()
	if err := ackOnceBack(t, ctx, rl, held); !errors.Is(err, errs.ErrLeaseExpired) {
		t.Fatalf("the leaf replica's Ack of its lease from before the Seek: %v; want LEASE_EXPIRED", err)
	}
}

// The same with the replica's own connection cut, twice: a record read
// once leaves the leases taken since alone through a reconnect with no
// reset recorded meanwhile, and a reset recorded during the next voids
// them, by the record's revision alone.
func TestASeekWhileAReplicasConnectionWasDownVoidsItsLeases(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	keys := token.RandomKeyring()
	rh := billingOn(t, natstest.Connect(t, ns), keys, "")
	link := natstest.StartProxy(t, ns.Addr().String())
	conn := link.Connect(t)
	rl := billingOn(t, conn, keys, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, _ := jetstream.New(nc)
	publish := func(n int) {
		for range n {
			if _, err := js.Publish(ctx, "orders.1", []byte("m")); err != nil {
				t.Fatal(err)
			}
		}
	}
	blip := func(during func()) {
		link.Cut()
		natstest.Eventually(t, 10*time.Second, "the connection down", func() bool { return !conn.IsConnected() })
		during()
		link.Mend()
	}
	publish(1)
	held := fetchN(t, ctx, rl, 1)[0] // consumer sequence 1
	blip(func() {
		if _, err := rh.Seek(ctx, "ORDERS", "billing", SeekTarget{Seq: 1}); err != nil {
			t.Fatal(err)
		}
		fetchN(t, ctx, rh, 1) // consumer sequence 1 again
	})
	if err := ackOnceBack(t, ctx, rl, held); !errors.Is(err, errs.ErrLeaseExpired) {
		t.Fatalf("an Ack of a lease from before the Seek: %v; want LEASE_EXPIRED", err)
	}
	publish(2)
	two := fetchN(t, ctx, rl, 2) // consumer sequences 2 and 3
	blip(func() {})
	if err := ackOnceBack(t, ctx, rl, two[0]); err != nil {
		t.Fatalf("an Ack after a reconnect with no reset recorded meanwhile: %v", err)
	}
	publish(1)
	blip(func() {
		if _, err := rh.Seek(ctx, "ORDERS", "billing", SeekTarget{Seq: 2}); err != nil {
			t.Fatal(err)
		}
		fetchN(t, ctx, rh, 3) // stream sequences 2 to 4, consumer sequences 1 to 3: as many as before
	})
	if err := ackOnceBack(t, ctx, rl, two[1]); !errors.Is(err, errs.ErrLeaseExpired) {
		t.Fatalf("an Ack of a lease from before the second Seek: %v; want LEASE_EXPIRED", err)
	}
}
