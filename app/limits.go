package app

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// What a listener bounds for callers it has not authenticated yet (README,
// "Running in production"): the connections it holds, how long one may sit
// idle (keep-alive settings, app.go), the size of a request's headers, and
// the Health service's streams, which need no credentials.

// maxHeaderBytes bounds a request's headers on both listeners: HTTP's
// MaxHeaderBytes and gRPC's header list (grpc-go's own default is 16 MiB).
const maxHeaderBytes = 64 << 10

// httpHeaderSlack is what net/http may read past MaxHeaderBytes before it
// answers 431: 4 KiB of "bufio slop" on a new connection, and up to 4 KiB
// more a kept-alive one's reader holds. HTTP's bound is set that much
// lower, so that no more than maxHeaderBytes is served.
const httpHeaderSlack = 8 << 10

// maxHandshake bounds how long a gRPC connection may take to finish its
// handshake (TLS, HTTP/2's preface and settings): one that says nothing
// holds a slot of max_connections, which grpc-go would leave it for 120s.
const maxHandshake = 10 * time.Second

// Health's Watch streams: a stream lives as long as its caller, so an open
// service bounds them, per connection and in all.
const (
	healthWatchesPerConn = 8
	healthWatches        = 1024
)

// cappedListener holds at most max connections open at once for callers,
// and kept more for the probes alone (kept.go): one past both is closed as
// it is accepted, before a byte is read from it.
type cappedListener struct {
	net.Listener
	slots, kept chan struct{}
	refused     func() // counts one refused connection
}

func capListener(l net.Listener, max, kept int, refused func()) net.Listener {
	return &cappedListener{Listener: l, slots: make(chan struct{}, max), kept: make(chan struct{}, kept), refused: refused}
}

func (l *cappedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &slotConn{Conn: c, free: func() { <-l.slots }}, nil
		default:
		}
		select {
		case l.kept <- struct{}{}:
			sc := &slotConn{Conn: c, free: func() { <-l.kept }, probesOnly: true}
			sc.ends = time.AfterFunc(keptLife, func() { _ = sc.release() })
			return sc, nil
		default:
			_ = c.Close()
			l.refused()
		}
	}
}

// slotConn gives its listener's slot back once, when it is closed.
type slotConn struct {
	net.Conn
	once       sync.Once
	free       func()
	probesOnly bool        // on a place kept for the probes
	ends       *time.Timer // a kept place's: closes it after keptLife
}

// RemoteAddr marks a connection on a place kept for the probes, through
// any TLS over it and into gRPC's peer, so that a call on it is told at no
// cost (keptForProbes).
func (c *slotConn) RemoteAddr() net.Addr {
	if c.probesOnly {
		return keptAddr{c.Conn.RemoteAddr()}
	}
	return c.Conn.RemoteAddr()
}

// keptAddr is the remote address of a connection kept for the probes.
type keptAddr struct{ net.Addr }

func (c *slotConn) Close() error {
	if c.ends != nil {
		c.ends.Stop()
	}
	return c.release()
}

func (c *slotConn) release() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
}

// boundedHealth is the Health service with its Watch streams bounded.
type boundedHealth struct {
	healthpb.HealthServer
	total  atomic.Int64
	mu     sync.Mutex
	byConn map[string]int // by the caller's address: one connection each
}

func boundHealth(h healthpb.HealthServer) *boundedHealth {
	return &boundedHealth{HealthServer: h, byConn: make(map[string]int)}
}

func (h *boundedHealth) Watch(req *healthpb.HealthCheckRequest, s healthpb.Health_WatchServer) error {
	release, err := h.admit(s.Context())
	if err != nil {
		return err
	}
	defer release()
	return h.HealthServer.Watch(req, s)
}

// admit takes a Watch slot of the caller's connection and of the whole
// service, or says RESOURCE_EXHAUSTED.
func (h *boundedHealth) admit(ctx context.Context) (release func(), err error) {
	conn := ""
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		conn = p.Addr.String()
	}
	if h.total.Add(1) > healthWatches {
		h.total.Add(-1)
		return nil, status.Errorf(codes.ResourceExhausted, "too many Health watches on this gateway (at most %d)", healthWatches)
	}
	h.mu.Lock()
	if h.byConn[conn] >= healthWatchesPerConn {
		h.mu.Unlock()
		h.total.Add(-1)
		return nil, status.Errorf(codes.ResourceExhausted, "too many Health watches on one connection (at most %d)", healthWatchesPerConn)
	}
	h.byConn[conn]++
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		if h.byConn[conn]--; h.byConn[conn] == 0 {
			delete(h.byConn, conn)
		}
		h.mu.Unlock()
		h.total.Add(-1)
	}, nil
}

// loopbackListener reports whether l takes loopback connections alone.
func loopbackListener(l net.Listener) bool {
	a, ok := l.Addr().(*net.TCPAddr)
	return ok && a.IP.IsLoopback()
}
