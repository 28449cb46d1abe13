package reliability

import (
	"io"
	"net"
	"sync"
	"testing"
)

// roundRobin is a TCP load balancer in front of jetgate replicas: each
// connection goes to the next backend in turn (one that refuses, to the
// one after it). A backend removed has its connections cut, as a balancer
// does once its health check fails.
type roundRobin struct {
	ln net.Listener
	wg sync.WaitGroup

	mu       sync.Mutex
	backends []string
	next     int
	open     map[net.Conn]string // both ends of each connection, by backend
	closed   bool
}

func newRoundRobin(t *testing.T) *roundRobin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rr := &roundRobin{ln: ln, open: make(map[net.Conn]string)}
	rr.wg.Go(rr.serve)
	t.Cleanup(rr.close)
	return rr
}

func (rr *roundRobin) addr() string { return rr.ln.Addr().String() }

func (rr *roundRobin) add(backend string) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.backends = append(rr.backends, backend)
}

// remove stops sending connections to backend and cuts those it has.
func (rr *roundRobin) remove(backend string) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	for i, b := range rr.backends {
		if b == backend {
			rr.backends = append(rr.backends[:i], rr.backends[i+1:]...)
			break
		}
	}
	for c, b := range rr.open {
		if b == backend {
			_ = c.Close()
			delete(rr.open, c)
		}
	}
}

// busiest is the backend with the most connections now ("" for none).
func (rr *roundRobin) busiest() string {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	count := make(map[string]int)
	best := ""
	for _, b := range rr.open {
		count[b]++
		if best == "" || count[b] > count[best] || count[b] == count[best] && b < best {
			best = b
		}
	}
	return best
}

func (rr *roundRobin) serve() {
	for {
		c, err := rr.ln.Accept()
		if err != nil {
			return
		}
		rr.wg.Go(func() { rr.pipe(c) })
	}
}

// pipe joins c to the next backend that takes a connection.
func (rr *roundRobin) pipe(c net.Conn) {
	rr.mu.Lock()
	tries := append([]string(nil), rr.backends...)
	start := rr.next
	rr.next++
	rr.mu.Unlock()
	var b net.Conn
	var backend string
	for i := range tries {
		backend = tries[(start+i)%len(tries)]
		var err error
		if b, err = net.Dial("tcp", backend); err == nil {
			break
		}
	}
	if b == nil {
		_ = c.Close()
		return
	}
	rr.mu.Lock()
	if rr.closed {
		rr.mu.Unlock()
		_ = c.Close()
		_ = b.Close()
		return
	}
	rr.open[c], rr.open[b] = backend, backend
	rr.mu.Unlock()
	var both sync.WaitGroup
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// One way ended: end the connection both ways, as a balancer does
		// when one side is gone.
		_ = dst.Close()
		_ = src.Close()
	}
	both.Go(func() { cp(b, c) })
	both.Go(func() { cp(c, b) })
	both.Wait()
	rr.mu.Lock()
	delete(rr.open, c)
	delete(rr.open, b)
	rr.mu.Unlock()
}

func (rr *roundRobin) close() {
	_ = rr.ln.Close()
	rr.mu.Lock()
	rr.closed = true
	for c := range rr.open {
		_ = c.Close()
	}
	rr.mu.Unlock()
	rr.wg.Wait()
}
