package replica

import (
	"context"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
)

// A consumer with no raft log (one replica, here of a stream of one) is
// held by one server of a cluster, and when that server restarts it
// redelivers what awaits an ack by times it kept to the second
// (lease.RestorePrecision) and says nothing: nats-server sends a new
// leader's advisory only for a consumer with a raft group. A replica
// connected to the holder hears the restart as a reconnect and cuts its
// leases then; one connected to another server would hear nothing, so its
// leases end a second sooner from the start.
func TestALeaseOfAConsumerHeldByAnotherServerEndsASecondSooner(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nodes, nc, _, s := ordersOnCluster(t, ctx, 1)
	var holder, other *natsserver.Server
	for _, n := range nodes {
		if n.Name() == s.CachedInfo().Cluster.Leader {
			holder = n
		} else {
			other = n
		}
	}
	if holder == nil {
		t.Fatalf("no node named %q holds the stream", s.CachedInfo().Cluster.Leader)
	}
	// The lease's wait as given: its deadline less its handing out (a
	// receipt a few milliseconds before). ack_wait 30s, margin 2s.
	given := func(c interface{ Holders() []lease.Holder }) time.Duration {
		h := c.Holders()[0]
		return h.Latest.Sub(h.Oldest)
	}
	wait := 30*time.Second - lease.Margin(30*time.Second)
	_, onHolder, _ := leaseOne(t, ctx, natstest.Connect(t, holder), nc)
	if got := given(onHolder); got <= wait-lease.RestorePrecision/2 || got > wait {
		t.Fatalf("connected to the holder: a lease of %v; want %v less the moment between receipt and handing out", got, wait)
	}
	_, elsewhere, _ := leaseOne(t, ctx, natstest.Connect(t, other), nc)
	if got := given(elsewhere); got > wait-lease.RestorePrecision {
		t.Fatalf("connected to another server: a lease of %v; want at most %v, a second less", got, wait-lease.RestorePrecision)
	}
}
