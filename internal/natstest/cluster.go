package natstest

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// ClusterOptions are the options of an n-node JetStream cluster on loopback
// ports free a moment ago, each node with its store in a temporary
// directory, named n1, n2, ...
func ClusterOptions(t testing.TB, n int) []*server.Options {
	t.Helper()
	ports := make([]int, n)
	routes := make([]string, n)
	for i := range ports {
		ports[i] = FreePort(t)
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", ports[i])
	}
	opts := make([]*server.Options, n)
	for i, p := range ports {
		opts[i] = &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1",
			Port:       FreePort(t),
			JetStream:  true,
			StoreDir:   t.TempDir(),
			NoLog:      true,
			NoSigs:     true,
			Cluster:    server.ClusterOpts{Name: "jetgate", Host: "127.0.0.1", Port: p},
			Routes:     server.RoutesFromStr(strings.Join(routes, ",")),
		}
	}
	return opts
}

// StartCluster runs an n-node cluster of ClusterOptions, waits until every
// node is healthy, and shuts them down at the end of the test. A port free
// a moment ago may be taken by another process before a node binds it: the
// cluster is then started again on other ports, up to three times.
func StartCluster(t testing.TB, n int) []*server.Server {
	t.Helper()
	StoresOutliveNodes(t)
	var nodes []*server.Server
	t.Cleanup(func() {
		// A node stopped while it still recovers its streams can leave a
		// stream's store running (nats-server): the cluster settles first.
		for _, ns := range nodes {
			_ = Healthy(ns, 30*time.Second)
		}
		for _, ns := range nodes {
			ns.Shutdown()
			ns.WaitForShutdown()
		}
	})
	var err error
	for range 3 {
		if nodes, err = startNodes(ClusterOptions(t, n)); err == nil {
			return nodes
		}
		for _, ns := range nodes {
			ns.Shutdown()
			ns.WaitForShutdown()
		}
		nodes = nil
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatal(err)
	return nil
}

// StoresOutliveNodes makes the test's temporary directory, where the nodes
// keep their stores, before a caller registers the cleanup that stops them.
// Cleanups run last first, and the directory's removal is registered when
// it is first made: made after, it would be removed under running nodes (a
// node then fails to open its files, and the removal finds files it wrote
// meanwhile).
func StoresOutliveNodes(t testing.TB) {
	t.TempDir()
}

// startNodes starts a node of each of opts and waits until all are
// healthy; it returns the nodes it started, with the first error.
func startNodes(opts []*server.Options) ([]*server.Server, error) {
	var nodes []*server.Server
	for _, o := range opts {
		ns, err := server.NewServer(o)
		if err != nil {
			return nodes, fmt.Errorf("nats server %s: %w", o.ServerName, err)
		}
		ns.Start()
		nodes = append(nodes, ns)
	}
	for _, ns := range nodes {
		if err := Healthy(ns, time.Minute); err != nil {
			return nodes, err
		}
	}
	return nodes, peersOnline(nodes, time.Minute)
}

// peersOnline waits until the meta leader of a cluster of nodes counts every
// node online, with its stats: healthy nodes alone may still be offline to
// it, and a stream of as many replicas then fails "no suitable peers for
// placement" (a CI failure).
func peersOnline(nodes []*server.Server, within time.Duration) error {
	if len(nodes) < 2 {
		return nil
	}
	deadline := time.Now().Add(within)
	for {
		for _, ns := range nodes {
			if ns.JetStreamIsLeader() && len(ns.JetStreamClusterPeers()) == len(nodes) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the meta leader did not count %d peers online within %v", len(nodes), within)
		}
		time.Sleep(50 * time.Millisecond) // the server offers no wait on its peers
	}
}

// ClusterURL names every node, for a client that moves between them.
func ClusterURL(nodes []*server.Server) string {
	urls := make([]string, len(nodes))
	for i, ns := range nodes {
		urls[i] = ns.ClientURL()
	}
	return strings.Join(urls, ",")
}

// Healthy waits for ns's health check to pass.
func Healthy(ns *server.Server, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		h := ns.Healthz(nil)
		if h.Status == "ok" {
			return nil
		}
		if time.Now().After(deadline) || strings.Contains(h.Error, "address already in use") {
			return fmt.Errorf("node %s not healthy within %v: %s %v", ns.Name(), within, h.Error, h.Errors)
		}
		time.Sleep(50 * time.Millisecond) // the server offers no wait on its health
	}
}

// FreePort is a loopback port free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
