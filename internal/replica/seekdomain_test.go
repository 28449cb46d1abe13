package replica_test

import (
	"bufio"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

// olderLeaf proxies client connections to ns, saying in the server's INFO
// that it runs nats-server version (a leaf node of an older release).
func olderLeaf(t *testing.T, ns *server.Server, version string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", ns.Addr().String())
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, u)
			mu.Unlock()
			go func() { _, _ = u.(*net.TCPConn).ReadFrom(c) }()
			go func() {
				br := bufio.NewReader(u)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if strings.HasPrefix(line, "INFO ") {
						line = strings.Replace(line, `"version":"`+server.VERSION+`"`, `"version":"`+version+`"`, 1)
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return "nats://" + l.Addr().String()
}

// A jetgate on a leaf node of nats-server 2.10 serves the consumers of a
// hub of a current release (the JetStream that answers every request, the
// reset included): Seek goes to the hub, which has the API, rather than be
// refused SEEK_UNSUPPORTED for the leaf's version (a reviewer's finding).
func TestSeekThroughAnOlderLeafReachesANewerHub(t *testing.T) {
	hub, leaf := natstest.StartHubAndLeaf(t, "hub", "leaf")
	hc := natstest.Connect(t, hub)
	natstest.Stream(t, hc, "ORDERS", "orders.>")
	nc, err := nats.Connect(olderLeaf(t, leaf, "2.10.22"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	t.Logf("the leaf says it is %s; the hub is %s", nc.ConnectedServerVersion(), server.VERSION)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := replica.New(ctx, replica.Options{Conn: nc, Keys: token.RandomKeyring(), Domain: "hub",
		Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing", AckWait: time.Minute}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	hjs, _ := jetstream.New(hc)
	if _, err := hjs.Publish(ctx, "orders.1", []byte("m")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Seek(ctx, "ORDERS", "billing", replica.SeekTarget{Seq: 1}); err != nil {
		t.Fatalf("Seek through the domain to a hub of %s, from a leaf saying 2.10.22: %v; want it done (the hub has the reset API)", server.VERSION, err)
	}
}
