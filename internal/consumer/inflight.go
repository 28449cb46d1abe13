package consumer

import (
	"context"
	"sync"
	"time"
)

// drainWait bounds a drain: a settle the server has not answered this long
// after a reset is most likely one it left unanswered (it answers no ack
// above the consumer's next delivery), and would hold the consumer's new
// deliveries until its request timeout for nothing. Answers come in
// milliseconds otherwise. A variable for the tests alone.
var drainWait = 500 * time.Millisecond

// inFlight is a consumer's settles between their Begin and the server's
// answer, by the generation in which they began. A settle begun just before
// a reset's void is published after it, and would land on the reset's
// redelivery after that was handed out: so a replica answers a peer's word,
// and a replica that noticed a reset or heard of it hands out the reset's
// deliveries, only once every settle begun before the void has been
// answered (drain), or drainWait passed. Settles begun meanwhile go on
// (they find their leases void), and are not waited for.
//
// A drain that gives up says so to the settles it waited for (begin's
// given up): their leases are void, and the server, which answers no ack
// above its next delivery, most likely left them unanswered. Each then
// stops waiting and is LEASE_EXPIRED, rather than UNAVAILABLE after its
// request timeout.
type inFlight struct {
	mu     sync.Mutex
	gen    uint64         // the generation settles begin in now
	counts map[uint64]int // settles in flight, by generation
	ended  chan struct{}  // closed, and replaced, as a generation's last ends
	// givenUp ends once a drain gave up on the settles of the current
	// generation; giveUp ends it.
	givenUp context.Context
	giveUp  context.CancelFunc
}

// begin notes a settle about to Begin, in the generation it returns; the
// settle calls end with it once the server answered, or it gave up.
// givenUp ends if a drain gives up waiting for it.
func (f *inFlight) begin() (gen uint64, givenUp context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counts == nil {
		f.counts, f.ended = make(map[uint64]int), make(chan struct{})
		f.givenUp, f.giveUp = context.WithCancel(context.Background())
	}
	f.counts[f.gen]++
	return f.gen, f.givenUp
}

// end notes the end of a settle begun in generation gen.
func (f *inFlight) end(gen uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counts[gen]--; f.counts[gen] == 0 {
		delete(f.counts, gen)
		close(f.ended)
		f.ended = make(chan struct{})
	}
}

// drain returns once every settle begun before it has ended, or after
// drainWait, or once ctx ends; it reports whether they had ended.
func (f *inFlight) drain(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, drainWait)
	defer cancel()
	f.mu.Lock()
	upTo, giveUp := f.gen, f.giveUp
	f.gen++
	f.givenUp, f.giveUp = context.WithCancel(context.Background())
	f.mu.Unlock()
	if giveUp != nil {
		defer giveUp() // on those begun before, if any is left
	}
	for {
		f.mu.Lock()
		busy, ended := false, f.ended
		for g := range f.counts {
			busy = busy || g <= upTo
		}
		f.mu.Unlock()
		if !busy {
			return true
		}
		select {
		case <-ended:
		case <-ctx.Done():
			return false
		}
	}
}
