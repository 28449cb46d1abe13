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

// StartHubAndLinkedLeaf is StartHubAndLeaf with the leaf node's link to the
// hub through a proxy the test cuts and mends (the leaf tries again every
// 100ms; the hub does not advertise its own address, which the leaf would
// reach past the proxy): the leaf's clients stay connected while the hub's
// JetStream is out of their reach.
func StartHubAndLinkedLeaf(t testing.TB, hubDomain, leafDomain string) (hub, leaf *server.Server, link *Proxy) {
	t.Helper()
	port := FreePort(t)
	hub = StartWith(t, &server.Options{
		ServerName: "hub", JetStreamDomain: hubDomain,
		LeafNode: server.LeafNodeOpts{Host: "127.0.0.1", Port: port, NoAdvertise: true},
	})
	link = StartProxy(t, fmt.Sprintf("127.0.0.1:%d", port))
	u, err := url.Parse("nats://" + link.Addr)
	if err != nil {
		t.Fatal(err)
	}
	leaf = StartWith(t, &server.Options{
		ServerName: "leaf", JetStreamDomain: leafDomain,
		LeafNode: server.LeafNodeOpts{ReconnectInterval: 100 * time.Millisecond, Remotes: []*server.RemoteLeafOpts{{URLs: []*url.URL{u}}}},
	})
	Eventually(t, 10*time.Second, "the leaf node connected to the hub", func() bool {
		return leaf.NumLeafNodes() > 0 && hub.NumLeafNodes() > 0
	})
	return hub, leaf, link
}
