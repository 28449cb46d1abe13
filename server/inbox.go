package server

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go"
)

// inbox is the gateway's one subscription for settle replies. Every settle
// gets its own reply subject under it, and the inbox routes each reply to
// whoever opened that subject. Owning the subscription, rather than calling
// nats.go's blocking Request once per token, lets a batch be pipelined: all
// of it published, then all replies awaited together.
type inbox struct {
	prefix string
	sub    *nats.Subscription

	mu     sync.Mutex
	next   uint64
	routes map[uint64]func(*nats.Msg)
}

func newInbox(nc *nats.Conn) (*inbox, error) {
	in := &inbox{prefix: nats.NewInbox(), routes: make(map[uint64]func(*nats.Msg))}
	sub, err := nc.Subscribe(in.prefix+".*", in.dispatch)
	if err != nil {
		return nil, fmt.Errorf("subscribe inbox: %w", err)
	}
	// A reply dropped as a slow consumer would fail its settle; what
	// arrives here is bounded by the settles in flight.
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("inbox limits: %w", err)
	}
	in.sub = sub
	return in, nil
}

// open returns a fresh reply subject whose messages go to fn, and the id that
// closes it. fn runs on the inbox's delivery goroutine and must not block.
func (in *inbox) open(fn func(*nats.Msg)) (string, uint64) {
	in.mu.Lock()
	in.next++
	id := in.next
	in.routes[id] = fn
	in.mu.Unlock()
	return in.prefix + "." + strconv.FormatUint(id, 10), id
}

func (in *inbox) close(id uint64) {
	in.mu.Lock()
	delete(in.routes, id)
	in.mu.Unlock()
}

func (in *inbox) dispatch(m *nats.Msg) {
	id, err := strconv.ParseUint(m.Subject[len(in.prefix)+1:], 10, 64)
	if err != nil {
		return
	}
	in.mu.Lock()
	fn := in.routes[id]
	in.mu.Unlock()
	if fn != nil {
		fn(m)
	}
}

func (in *inbox) stop() error { return in.sub.Unsubscribe() }
