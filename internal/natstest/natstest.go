// Package natstest runs real, in-process NATS JetStream servers for tests:
// random ports, a temporary store, shut down at the end of the test.
package natstest

import (
	"cmp"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/embedded"
)

// Start runs a JetStream server on a random port with its store in a
// temporary directory.
func Start(t testing.TB) *server.Server {
	t.Helper()
	return StartIn(t, t.TempDir(), -1)
}

// StartIn runs a JetStream server with its store in dir, on port (-1 for a
// random one), so that a test can restart a server on the same store.
func StartIn(t testing.TB, dir string, port int) *server.Server {
	t.Helper()
	ns, err := embedded.Start(embedded.Options{Host: "127.0.0.1", Port: port, StoreDir: dir})
	if err != nil {
		t.Fatalf("nats server: %v", err)
	}
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	return ns
}

// StartWith runs a server with opts of the test's own (users, limits), on
// 127.0.0.1 and a random port with JetStream in a temporary store unless
// opts say otherwise, and shuts it down at the end of the test.
func StartWith(t testing.TB, opts *server.Options) *server.Server {
	t.Helper()
	o := *opts
	o.Host = cmp.Or(o.Host, "127.0.0.1")
	o.Port = cmp.Or(o.Port, -1)
	o.StoreDir = cmp.Or(o.StoreDir, t.TempDir())
	o.JetStream, o.NoLog, o.NoSigs = true, true, true
	ns, err := server.NewServer(&o)
	if err != nil {
		t.Fatalf("nats server: %v", err)
	}
	ns.Start()
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server did not start in 10s")
	}
	return ns
}

// Connect connects to ns and closes the connection at the end of the test.
func Connect(t testing.TB, ns *server.Server, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(ns.ClientURL(), opts...)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Stream creates a stream with the given subjects.
func Stream(t testing.TB, nc *nats.Conn, name string, subjects ...string) jetstream.Stream {
	t.Helper()
	return streamOf(t, nc, jetstream.StreamConfig{Name: name, Subjects: subjects})
}

// MemoryStream creates a stream with the given subjects held in memory.
// A test that reads a consumer's delivered count right after a reset to
// the stream's first message needs one: a file-backed consumer (nats-server
// 2.15.2) may answer the count its state file held before the reset, which
// its running state then takes in, until it delivers past that count.
func MemoryStream(t testing.TB, nc *nats.Conn, name string, subjects ...string) jetstream.Stream {
	t.Helper()
	return streamOf(t, nc, jetstream.StreamConfig{Name: name, Subjects: subjects, Storage: jetstream.MemoryStorage})
}

func streamOf(t testing.TB, nc *nats.Conn, cfg jetstream.StreamConfig) jetstream.Stream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.CreateStream(ctx, cfg)
	if err != nil {
		t.Fatalf("create stream %s: %v", cfg.Name, err)
	}
	return s
}

// StreamMsgs reads every message of stream on subject, in order.
func StreamMsgs(t testing.TB, js jetstream.JetStream, stream, subject string) []*jetstream.RawStreamMsg {
	t.Helper()
	s, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for next := uint64(1); ; {
		m, err := s.GetMsg(context.Background(), next, jetstream.WithGetMsgSubject(subject))
		if err != nil {
			return out
		}
		out = append(out, m)
		next = m.Sequence + 1
	}
}

// Eventually polls cond until it holds or the deadline passes.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true within %v", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Proxy forwards TCP connections to target until Blackhole is called; from
// then on it swallows every byte both ways and keeps the connections open,
// as a network partition does (no FIN, no RST). Cut closes them instead,
// and refuses new ones until Mend (a blip, a NATS node restarting).
type Proxy struct {
	Addr    string
	frozen  atomic.Bool
	refused atomic.Bool
	mu      sync.Mutex
	conns   []net.Conn
}

// StartProxy listens on a random port and proxies to target (host:port).
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: l.Addr().String()}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if p.refused.Load() {
				c.Close()
				continue
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); p.pipe(u, c) }()
			go func() { defer wg.Done(); p.pipe(c, u) }()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		p.Cut()
		wg.Wait()
	})
	return p
}

// Cut closes every connection through the proxy and refuses new ones until
// Mend.
func (p *Proxy) Cut() {
	p.refused.Store(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Mend lets connections through again after Cut.
func (p *Proxy) Mend() { p.refused.Store(false) }

// Connect connects to the server through the proxy, as a replica does
// (nothing buffered while it reconnects), reconnecting every 20ms without
// end; it is closed at the end of the test.
func (p *Proxy) Connect(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect("nats://"+p.Addr, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond),
		nats.ReconnectBufSize(-1), nats.Timeout(200*time.Millisecond))
	if err != nil {
		t.Fatalf("connect through the proxy: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Blackhole stops all traffic through the proxy.
func (p *Proxy) Blackhole() { p.frozen.Store(true) }

// Thaw lets traffic through again, for connections made from then on (the
// ones open while it was black-holed have lost bytes).
func (p *Proxy) Thaw() { p.frozen.Store(false) }

func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			return
		}
		if p.frozen.Load() {
			continue
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			return
		}
	}
}
