package replica_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

// on_demand binds a consumer only when its stream and its name match one
// pattern pair: an existing consumer of another stream with a matching
// name, or of the stream with another name, is CONSUMER_NOT_FOUND and
// bound nowhere.
func TestOnDemandBindsOnlyWhatMatchesBothPatterns(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	orders := natstest.Stream(t, nc, "ORDERS", "orders.>")
	audit := natstest.Stream(t, nc, "AUDIT", "audit.>")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []struct {
		s    jetstream.Stream
		name string
	}{{orders, "team-a"}, {orders, "billing"}, {audit, "team-a"}} {
		if _, err := c.s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: c.name, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
	}
	a := replicaOf(t, ns, token.RandomKeyring(), replica.Options{OnDemand: consumer.OnDemand{Match: []consumer.Match{{Stream: "ORDERS", Consumer: "team-*"}}}})
	for _, tc := range []struct {
		stream, name string
		served       bool
	}{
		{"ORDERS", "team-a", true},
		{"ORDERS", "billing", false},
		{"AUDIT", "team-a", false},
	} {
		_, err := a.Consumer(ctx, tc.stream, tc.name)
		if tc.served && err != nil {
			t.Fatalf("%s/%s matches: %v", tc.stream, tc.name, err)
		}
		if !tc.served && !errors.Is(err, errs.ErrConsumerNotFound) {
			t.Fatalf("%s/%s matches one pattern of the pair only: %v, want CONSUMER_NOT_FOUND", tc.stream, tc.name, err)
		}
		if _, err := a.Pulls(tc.stream, tc.name); (err == nil) != tc.served {
			t.Fatalf("%s/%s bound: %v, want %v", tc.stream, tc.name, err == nil, tc.served)
		}
	}
}

// A replica that unbinds an idle on-demand consumer leaves its roster: the
// replicas still serving it count one fewer (and split its max_waiting
// among fewer).
func TestAnUnbindLeavesTheRoster(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	s := natstest.Stream(t, nc, "ORDERS", "orders.>")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "team-a", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	match := []consumer.Match{{Stream: "ORDERS", Consumer: "team-*"}}
	keys := token.RandomKeyring()
	a := replicaOf(t, ns, keys, replica.Options{OnDemand: consumer.OnDemand{Match: match, IdleUnbind: time.Hour}})
	// b keeps it bound long enough for a to see b among its replicas.
	b := replicaOf(t, ns, keys, replica.Options{OnDemand: consumer.OnDemand{Match: match, IdleUnbind: 2 * time.Second}})
	for _, r := range []*replica.Replica{a, b} {
		if _, err := r.Consumer(ctx, "ORDERS", "team-a"); err != nil {
			t.Fatal(err)
		}
	}
	replicas := func() int {
		u, err := a.Pulls("ORDERS", "team-a")
		if err != nil {
			t.Fatalf("a stopped serving team-a: %v", err)
		}
		return u.Replicas
	}
	natstest.Eventually(t, 10*time.Second, "a counts b serving team-a", func() bool { return replicas() == 2 })
	natstest.Eventually(t, 10*time.Second, "b unbinds the idle team-a", func() bool {
		_, err := b.Pulls("ORDERS", "team-a")
		return errors.Is(err, errs.ErrConsumerNotFound)
	})
	natstest.Eventually(t, 10*time.Second, "a counts b no more", func() bool { return replicas() == 1 })
}
