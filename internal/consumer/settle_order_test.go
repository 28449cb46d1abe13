package consumer_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/pull"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// On a consumer of one replica, a batch of settles asks one reply, of the
// lowest stream sequence, sent last, and is done on the server when the
// Settle returns.
func TestSettleOnOneReplicaAsksOneReplyABatch(t *testing.T) {
	e := start(t, consumer.Config{MaxAckPending: 1024})
	asked, last := settleWatched(t, e, 6)
	if !slices.Equal(asked, []uint64{1}) || last != 1 {
		t.Errorf("asked replies of stream sequences %v, sent %d last; want one, of 1, sent last", asked, last)
	}
}

// On a replicated consumer the server answers a settle once its raft log
// has it, and a new leader may not have what the old one took: every
// settle asks a reply of its own.
func TestSettleOnThreeReplicasAsksAReplyEach(t *testing.T) {
	nodes := natstest.StartCluster(t, 3)
	own, err := nats.Connect(natstest.ClusterURL(nodes))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(own.Close)
	js, err := jetstream.New(own)
	if err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, time.Minute, "an R3 stream", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{"orders.>"}, Replicas: 3})
		return err == nil
	})
	e := bindOn(t, nodes[0], own, consumer.Config{MaxAckPending: 1024}, nil, 5*time.Second)
	if asked, _ := settleWatched(t, e, 6); !slices.Equal(asked, []uint64{1, 2, 3, 4, 5, 6}) {
		t.Errorf("asked replies of stream sequences %v, want every one", asked)
	}
}

// settleWatched publishes n messages, fetches them and acks them through
// the Consumer, highest stream sequence first, while a connection of its
// own watches the acks reach the server. It checks that the server has
// applied them all when Settle returns, and returns the stream sequences
// whose acks asked a reply, in order, and the one sent last.
func settleWatched(t *testing.T, e *env, n int) (asked []uint64, last uint64) {
	t.Helper()
	for range n {
		e.publish("orders.1", "x")
	}
	// A clustered consumer may hand a batch over in parts: fetch until all
	// n are in hand.
	var got []*consumer.Delivery
	deadline := time.Now().Add(within)
	for len(got) < n && time.Now().Before(deadline) {
		got = append(got, e.fetch(consumer.FetchRequest{Batch: n - len(got), Expires: time.Second}).Messages...)
	}
	if len(got) != n {
		t.Fatalf("fetched %d, want %d", len(got), n)
	}
	var (
		mu   sync.Mutex
		seen []*nats.Msg
	)
	watch := natstest.Connect(t, e.ns)
	sub, err := watch.Subscribe("$JS.ACK."+stream+"."+name+".>", func(m *nats.Msg) {
		mu.Lock()
		seen = append(seen, m)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	cs := make([]token.Claims, n)
	for i, d := range got {
		cs[n-1-i] = e.c.ClaimsOf(d) // the lowest is not last already
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for i, out := range e.c.Settle(ctx, lease.OpAck, cs, settle.Args{}) {
		if out.Err != nil {
			t.Errorf("settle %d: %v", i, out.Err)
		}
	}
	if ci := e.info(); ci.NumAckPending != 0 || ci.AckFloor.Stream != uint64(n) {
		t.Errorf("after Settle: %d ack pending, ack floor %d; want 0 and %d", ci.NumAckPending, ci.AckFloor.Stream, n)
	}
	natstest.Eventually(t, within, "the watcher sees every settle", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == n
	})
	mu.Lock()
	defer mu.Unlock()
	for _, m := range seen {
		md, err := pull.ParseAckSubject(m.Subject)
		if err != nil {
			t.Fatal(err)
		}
		if m.Reply != "" {
			asked = append(asked, md.StreamSeq)
		}
		last = md.StreamSeq
	}
	slices.Sort(asked)
	return asked, last
}
