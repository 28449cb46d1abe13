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
// node is healthy, and shuts them down at the end of the test.
func StartCluster(t testing.TB, n int) []*server.Server {
	t.Helper()
	nodes := make([]*server.Server, 0, n)
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
	for _, o := range ClusterOptions(t, n) {
		ns, err := server.NewServer(o)
		if err != nil {
			t.Fatalf("nats server %s: %v", o.ServerName, err)
		}
		ns.Start()
		nodes = append(nodes, ns)
	}
	for _, ns := range nodes {
		if err := Healthy(ns, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	return nodes
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
		if time.Now().After(deadline) {
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
