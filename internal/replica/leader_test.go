package replica

import (
	"context"
	"errors"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
)

// A replicated consumer's new leader redelivers what awaits an ack by the
// times it holds to the second, as a restarted server does (nats-server
// keeps them so in the consumer's replicated state): when the leader
// changes, every lease the replica holds ends a second sooner, though its
// connection never broke; once, however many leaders follow.
func TestANewConsumerLeaderShortensTheLeasesHeld(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nodes, nc, js, _ := ordersOnCluster(t, ctx, 3)
	r, c, _ := leaseOne(t, ctx, natstest.Connect(t, nodes[0]), nc)
	before := c.Holders()[0].Latest
	leader := func() string {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		ci, err := js.Consumer(ctx, "ORDERS", "billing")
		if err != nil || ci.CachedInfo().Cluster == nil {
			return ""
		}
		return ci.CachedInfo().Cluster.Leader
	}
	stepDown := func() {
		t.Helper()
		was := leader()
		natstest.Eventually(t, 20*time.Second, "the consumer's leader stepped down", func() bool {
			m, err := nc.Request("$JS.API.CONSUMER.LEADER.STEPDOWN.ORDERS.billing", nil, 5*time.Second)
			return err == nil && m.Header.Get("Status") == "" && len(m.Data) > 0
		})
		natstest.Eventually(t, 20*time.Second, "a new leader", func() bool { now := leader(); return now != "" && now != was })
	}
	stepDown()
	want := before.Add(-lease.RestorePrecision)
	natstest.Eventually(t, 20*time.Second, "the lease ends a second sooner", func() bool { return c.Holders()[0].Latest.Equal(want) })
	stepDown()
	if err := r.relay.catchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.Holders()[0].Latest; !got.Equal(want) {
		t.Fatalf("a second leader moved the lease to %v; want it left at %v, a second sooner than at first, once", got, want)
	}
}

// clusterNoPeers is JetStream's error code for a placement with no suitable
// peers (nats-server's JSClusterNoPeersErr).
const clusterNoPeers jetstream.ErrorCode = 10005

// ordersOnCluster starts a cluster of three servers and makes ORDERS on it
// with the given replicas; it returns the servers, a connection to the
// first, its JetStream, and the stream.
func ordersOnCluster(t *testing.T, ctx context.Context, replicas int) ([]*natsserver.Server, *nats.Conn, jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	nodes := natstest.StartCluster(t, 3)
	nc := natstest.Connect(t, nodes[0])
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// A node healthy on its own may not be known to the meta leader yet: a
	// placement refused for it (no suitable peers, 10005) is tried again.
	var s jetstream.Stream
	natstest.Eventually(t, 10*time.Second, "the stream placed", func() bool {
		s, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Replicas: replicas})
		var api *jetstream.APIError
		if err != nil && !(errors.As(err, &api) && api.ErrorCode == clusterNoPeers) {
			t.Fatal(err)
		}
		return err == nil
	})
	return nodes, nc, js, s
}
