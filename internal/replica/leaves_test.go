package replica_test

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/jetgate/jetgate/internal/natstest"
)

// startHubAndTwoLeaves: a hub of domain "hub" and two leaf nodes with
// JetStream domains of their own.
func startHubAndTwoLeaves(t *testing.T) (hub, leafA, leafB *server.Server) {
	t.Helper()
	port := natstest.FreePort(t)
	hub = natstest.StartWith(t, &server.Options{
		ServerName: "hub", JetStreamDomain: "hub",
		LeafNode: server.LeafNodeOpts{Host: "127.0.0.1", Port: port},
	})
	u, _ := url.Parse(fmt.Sprintf("nats://127.0.0.1:%d", port))
	mk := func(name string) *server.Server {
		return natstest.StartWith(t, &server.Options{
			ServerName: name, JetStreamDomain: name,
			LeafNode: server.LeafNodeOpts{Remotes: []*server.RemoteLeafOpts{{URLs: []*url.URL{u}}}},
		})
	}
	leafA, leafB = mk("leafa"), mk("leafb")
	natstest.Eventually(t, 10*time.Second, "leaves connected", func() bool {
		return leafA.NumLeafNodes() > 0 && leafB.NumLeafNodes() > 0 && hub.NumLeafNodes() == 2
	})
	return hub, leafA, leafB
}
