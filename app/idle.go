package app

import (
	"context"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
)

// idleConns closes a gRPC connection on which no call has been in flight
// for limits.idle_timeout, not counting the Health service's calls and
// calls the guard refused. gRPC's own MaxConnectionIdle counts any stream
// in flight: a caller with no credentials held a slot of max_connections
// for good with one Health Watch, which needs none (a reviewer filled every
// slot with three, and no authenticated caller got in), and kept one alive
// with a refused call now and then. So an interceptor after the guard
// notes each call that passed it, and a sweep closes, every quarter of
// idle_timeout, each connection that has had none for that long.
type idleConns struct {
	idle  time.Duration
	mu    sync.Mutex
	conns map[string]*callsOf // by the caller's address, as gRPC's peer has it
}

// callsOf is what one connection has in flight, and since when it has been
// idle.
type callsOf struct {
	conn     net.Conn
	inFlight int
	since    time.Time
}

func newIdleConns(idle time.Duration) *idleConns {
	return &idleConns{idle: idle, conns: make(map[string]*callsOf)}
}

// listen notes every connection l accepts, until it is closed.
func (ic *idleConns) listen(l net.Listener) net.Listener { return &idleListener{Listener: l, ic: ic} }

type idleListener struct {
	net.Listener
	ic *idleConns
}

func (l *idleListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	t := &idleConn{Conn: c, ic: l.ic, addr: c.RemoteAddr().String()}
	l.ic.mu.Lock()
	l.ic.conns[t.addr] = &callsOf{conn: t, since: time.Now()}
	l.ic.mu.Unlock()
	return t, nil
}

// idleConn forgets its connection when it is closed.
type idleConn struct {
	net.Conn
	ic   *idleConns
	addr string
	once sync.Once
}

func (c *idleConn) Close() error {
	c.once.Do(func() {
		c.ic.mu.Lock()
		if o := c.ic.conns[c.addr]; o != nil && o.conn == c {
			delete(c.ic.conns, c.addr)
		}
		c.ic.mu.Unlock()
	})
	return c.Conn.Close()
}

// begin notes a call of ctx's connection that passed the guard; the
// function it returns notes its end.
func (ic *idleConns) begin(ctx context.Context, method string) func() {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil || strings.HasPrefix(method, "/grpc.health.v1.Health/") {
		return func() {}
	}
	addr := p.Addr.String()
	ic.mu.Lock()
	o := ic.conns[addr]
	if o != nil {
		o.inFlight++
	}
	ic.mu.Unlock()
	return func() {
		ic.mu.Lock()
		if o != nil {
			o.inFlight--
			o.since = time.Now()
		}
		ic.mu.Unlock()
	}
}

func (ic *idleConns) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	defer ic.begin(ctx, info.FullMethod)()
	return h(ctx, req)
}

func (ic *idleConns) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	defer ic.begin(ss.Context(), info.FullMethod)()
	return h(srv, ss)
}

// run sweeps until ctx ends; with no idle_timeout (0), it does nothing.
func (ic *idleConns) run(ctx context.Context) {
	if ic.idle <= 0 {
		return
	}
	t := time.NewTicker(max(ic.idle/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			ic.sweep(now)
		}
	}
}

// sweep closes the connections idle for idle_timeout at now.
func (ic *idleConns) sweep(now time.Time) {
	var idle []net.Conn
	ic.mu.Lock()
	for _, o := range ic.conns {
		if o.inFlight == 0 && now.Sub(o.since) >= ic.idle {
			idle = append(idle, o.conn)
		}
	}
	ic.mu.Unlock()
	for _, c := range idle {
		_ = c.Close()
	}
}
