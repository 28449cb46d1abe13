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
// neither had bound: each counted itself alone at its bind (the roster had
// not counted the other yet) and opened its whole part of max_waiting, 8
// pulls where the server keeps 5. The server dropped 3 without a word, and
// their callers were told MAX_WAITING after 3s of an 8s expiry while
// messages waited (README: MAX_WAITING means clients outside jetgate hold
// the places; a Fetch that finds its replica's part taken waits in line).
// The race is a matter of timing, so three consumers are bound so in turn.
func TestY16TwoReplicasBindingAtOnceShareMaxWaiting(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	s := natstest.Stream(t, nc, "ORDERS", "orders.>")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	od := consumer.OnDemand{Match: []consumer.Match{{Stream: "ORDERS", Consumer: "team-*"}}}
	keys := token.RandomKeyring()
	rs := []*replica.Replica{replicaOf(t, ns, keys, replica.Options{OnDemand: od}), replicaOf(t, ns, keys, replica.Options{OnDemand: od})}
	for round := range 3 {
		name := fmt.Sprintf("team-w%d", round)
		if _, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy,
			MaxWaiting: 5, FilterSubject: "orders." + name + ".>"}); err != nil {
			t.Fatal(err)
		}
		y16FetchThroughBoth(ctx, t, js, rs, name)
	}
}

// y16FetchThroughBoth has 8 long-polling callers Fetch name, 4 through each
// replica, started together; once their pulls are open or in line, 8
// messages are published, one for each: every caller must get one.
func y16FetchThroughBoth(ctx context.Context, t *testing.T, js jetstream.JetStream, rs []*replica.Replica, name string) {
	t.Helper()
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
			res, err := rs[i%2].Fetch(ctx, "ORDERS", name, consumer.FetchRequest{Batch: 1, Expires: 8 * time.Second})
			answers <- answer{len(res.Messages), res.Empty, err}
		}()
	}
	started.Wait()
	natstest.Eventually(t, 5*time.Second, "the callers wait on the server or in line", func() bool {
		waiting := 0
		for _, r := range rs {
			u, err := r.Pulls("ORDERS", name)
			if err != nil {
				return false
			}
			waiting += u.Open + u.Queued
		}
		return waiting == callers
	})
	// The server drops a pull past max_waiting as it comes: it has seen
	// them all once it holds as many as it keeps.
	natstest.Eventually(t, 5*time.Second, "the pulls reach the server", func() bool {
		ci, err := js.Consumer(ctx, "ORDERS", name)
		if err != nil {
			return false
		}
		open := 0
		for _, r := range rs {
			u, _ := r.Pulls("ORDERS", name)
			open += u.Open
		}
		return ci.CachedInfo().NumWaiting >= min(open, 5)
	})
	for i := range callers {
		if _, err := js.Publish(ctx, fmt.Sprintf("orders.%s.%d", name, i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	for range callers {
		a := <-answers
		if a.err != nil || a.empty == consumer.EmptyMaxWaiting {
			t.Errorf("%s: a caller got %d messages, empty %v, err %v", name, a.n, a.empty, a.err)
		}
		got += a.n
	}
	if got != callers {
		t.Errorf("%s: %d of %d waiting callers got a message; one was published for each", name, got, callers)
	}
}
