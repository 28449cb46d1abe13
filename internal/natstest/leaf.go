package natstest

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// StartHubAndLeaf runs a JetStream hub of domain hubDomain that takes leaf
// nodes, and a leaf node server with JetStream of its own (domain
// leafDomain) connected to it, as a NATS deployment with leaf nodes has
// them: a client of the leaf reaches the hub's JetStream through the hub's
// domain ($JS.<hubDomain>.API). It returns once the leaf is connected.
func StartHubAndLeaf(t testing.TB, hubDomain, leafDomain string) (hub, leaf *server.Server) {
	t.Helper()
	port := FreePort(t)
	hub = StartWith(t, &server.Options{
		ServerName: "hub", JetStreamDomain: hubDomain,
		LeafNode: server.LeafNodeOpts{Host: "127.0.0.1", Port: port},
	})
	u, err := url.Parse(fmt.Sprintf("nats://127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	leafOpts := &server.Options{
		ServerName: "leaf", JetStreamDomain: leafDomain,
		LeafNode: server.LeafNodeOpts{Remotes: []*server.RemoteLeafOpts{{URLs: []*url.URL{u}}}},
	}
	leaf = StartWith(t, leafOpts)
	Eventually(t, 10*time.Second, "the leaf node connected to the hub", func() bool {
		return leaf.NumLeafNodes() > 0 && hub.NumLeafNodes() > 0
	})
	return hub, leaf
}
