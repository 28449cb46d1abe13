package replica_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

// The server's advisories cross a leaf node both ways, each naming its
// domain, and jetgate takes only those of the domain it serves, dead
// letters' too: the leaf's ORDERS/billing running a message out of
// deliveries made a dead letter of the hub's ORDERS message at that
// sequence, which the hub's consumer never gave up on.
func TestAnotherDomainsMaxDeliveriesMakesNoDeadLetter(t *testing.T) {
	hub, leaf := natstest.StartHubAndLeaf(t, "hub", "leaf")
	hc := natstest.Connect(t, hub)
	natstest.Stream(t, hc, "ORDERS", "orders.>")
	natstest.Stream(t, hc, "DEAD", "dead.>")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hjs, err := jetstream.New(hc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hjs.Publish(ctx, "orders.1", []byte("hub message, never given up on")); err != nil {
		t.Fatal(err)
	}
	// The hub's jetgate, in the hub's own domain.
	replicaOf(t, hub, token.RandomKeyring(), replica.Options{
		Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing", DeadLetter: &consumer.DeadLetter{Subject: "dead.billing"}}},
	})

	// The leaf's own ORDERS/billing (domain leaf), max_deliver 1: its
	// message, delivered once and not acked, runs out of deliveries.
	lc := natstest.Connect(t, leaf)
	ljs, err := jetstream.New(lc)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := ljs.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"leaforders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ljs.Publish(ctx, "leaforders.1", []byte("leaf message")); err != nil {
		t.Fatal(err)
	}
	lcons, err := ls.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: time.Second, MaxDeliver: 1})
	if err != nil {
		t.Fatal(err)
	}
	seen, err := hc.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.ORDERS.billing")
	if err != nil {
		t.Fatal(err)
	}
	if err := hc.Flush(); err != nil {
		t.Fatal(err)
	}
	first, err := lcons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for range first.Messages() {
	}
	// A pull waiting after ack_wait has the server give the message up.
	waited := make(chan struct{})
	defer func() { <-waited }()
	go func() {
		defer close(waited)
		if b, err := lcons.Fetch(1, jetstream.FetchMaxWait(3*time.Second)); err == nil {
			for range b.Messages() {
			}
		}
	}()
	adv, err := seen.NextMsg(15 * time.Second)
	if err != nil {
		t.Fatalf("the leaf's MAX_DELIVERIES advisory did not reach the hub: %v", err)
	}
	if !strings.Contains(string(adv.Data), `"domain":"leaf"`) {
		t.Fatalf("the advisory on the hub names no leaf domain: %s", adv.Data)
	}
	natstest.Eventually(t, 15*time.Second, "the advisory stream worked off", func() bool {
		s, err := hjs.Stream(ctx, "JETGATE_ADVISORIES")
		if err != nil {
			return false
		}
		info, err := s.Info(ctx)
		return err == nil && info.State.LastSeq > 0 && info.State.Msgs == 0
	})
	for _, m := range natstest.StreamMsgs(t, hjs, "DEAD", "dead.billing") {
		t.Errorf("a dead letter of the hub's ORDERS/billing from the leaf's consumer: seq %s, reason %s, data %q",
			m.Header.Get("Jetgate-Dead-Seq"), m.Header.Get("Jetgate-Dead-Reason"), m.Data)
	}
}
