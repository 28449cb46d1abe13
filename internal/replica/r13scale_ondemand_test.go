package replica_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

// First calls through two replicas at once of an on-demand consumer that
// neither had bound share its max_waiting: each replica counted itself
// alone at its bind and opened its whole part, 8 pulls where the server
// keeps 5; it dropped 3 without a word, and 3 of 8 long-polling callers
// were told MAX_WAITING after 3s of an 8s expiry while 3 messages waited
// on the server (README: MAX_WAITING means clients outside jetgate hold
// the places, and a Fetch that finds its replica's part taken waits in
// line).
func TestConcurrentFirstCallsThroughTwoReplicasShareMaxWaiting(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	s := natstest.Stream(t, nc, "ORDERS", "orders.>")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "team-w", AckPolicy: jetstream.AckExplicitPolicy, MaxWaiting: 5}); err != nil {
		t.Fatal(err)
	}
	od := consumer.OnDemand{Match: []consumer.Match{{Stream: "ORDERS", Consumer: "team-*"}}}
	keys := token.RandomKeyring()
	rs := []*replica.Replica{replicaOf(t, ns, keys, replica.Options{OnDemand: od}), replicaOf(t, ns, keys, replica.Options{OnDemand: od})}

	const callers = 8
	type answer struct {
		n     int
		empty consumer.EmptyReason
		err   error
	}
	answers := make(chan answer, callers)
	var started sync.WaitGroup
	for i := range callers {
		started.Add(1)
		go func() {
			started.Done()
			res, err := rs[i%2].Fetch(ctx, "ORDERS", "team-w", consumer.FetchRequest{Batch: 1, Expires: 8 * time.Second})
			answers <- answer{len(res.Messages), res.Empty, err}
		}()
	}
	started.Wait()
	natstest.Eventually(t, 5*time.Second, "the callers wait on the server or in line", func() bool {
		waiting := 0
		for _, r := range rs {
			u, err := r.Pulls("ORDERS", "team-w")
			if err != nil {
				return false
			}
			waiting += u.Open + u.Queued
		}
		return waiting == callers
	})
	// The server drops a pull past max_waiting as it comes: give it the
	// time to have seen all of them.
	natstest.Eventually(t, 5*time.Second, "the pulls reach the server", func() bool {
		ci, err := js.Consumer(ctx, "ORDERS", "team-w")
		if err != nil {
			return false
		}
		open := 0
		for _, r := range rs {
			u, _ := r.Pulls("ORDERS", "team-w")
			open += u.Open
		}
		return ci.CachedInfo().NumWaiting >= min(open, 5)
	})
	for i := range callers {
		if _, err := js.Publish(ctx, fmt.Sprintf("orders.%d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	for range callers {
		a := <-answers
		if a.err != nil || a.empty == consumer.EmptyMaxWaiting {
			t.Errorf("a caller: %d messages, empty %v, err %v", a.n, a.empty, a.err)
		}
		got += a.n
	}
	if got != callers {
		t.Fatalf("%d of %d waiting callers got a message; every one of them was published", got, callers)
	}
}
