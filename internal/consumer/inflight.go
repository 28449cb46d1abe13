package consumer

import (
	"context"
	"sync"
)

// inFlight is a consumer's settles between their Begin and the server's
// answer, by the generation in which they began. A settle begun just before
// a reset's void is published after it, and would land on the reset's
// redelivery after that was handed out: so a replica answers a peer's word,
// and a teller hands out the reset's deliveries, only once every settle
// begun before the void has been answered (drain), or the word's wait is
// over. Settles begun meanwhile go on (they find their leases void), and
// are not waited for.
type inFlight struct {
	mu     sync.Mutex
	gen    uint64         // the generation settles begin in now
	counts map[uint64]int // settles in flight, by generation
	ended  chan struct{}  // closed, and replaced, as a generation's last ends
}

// begin notes a settle about to Begin; it calls end once the server
// answered, or the settle gave up.
func (f *inFlight) begin() (end func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counts == nil {
		f.counts, f.ended = make(map[uint64]int), make(chan struct{})
	}
	g := f.gen
	f.counts[g]++
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.counts[g]--; f.counts[g] == 0 {
			delete(f.counts, g)
			close(f.ended)
			f.ended = make(chan struct{})
		}
	}
}

// drain returns once every settle begun before it has ended, or ctx ends.
func (f *inFlight) drain(ctx context.Context) {
	f.mu.Lock()
	upTo := f.gen
	f.gen++
	f.mu.Unlock()
	for {
		f.mu.Lock()
		busy, ended := false, f.ended
		for g := range f.counts {
			busy = busy || g <= upTo
		}
		f.mu.Unlock()
		if !busy {
			return
		}
		select {
		case <-ended:
		case <-ctx.Done():
			return
		}
	}
}
