package consumer

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// drainWait bounds a drain: a settle the server has not answered this long
// after a reset is most likely one it left unanswered (it answers no ack
// above the consumer's next delivery), and would hold the consumer's new
// deliveries until its request timeout for nothing. Answers come in
// milliseconds otherwise. A variable for the tests alone.
var drainWait = 500 * time.Millisecond

// inFlight is a consumer's settles between their Begin and the server's
// answer, by the generation in which they began; each reset noticed (the
// leases voided) closes a generation (voided). A settle begun just before a
// reset's void is published after it, and would land on the reset's
// redelivery after that was handed out: so a replica answers a peer's word,
// and a replica that noticed a reset or heard of it hands out the reset's
// deliveries, only once every settle begun before the last void has been
// answered (drain), or drainWait passed. Settles begun since go on (their
// leases are live, or they find them void), and are not waited for.
//
// A drain that gives up says so to the settles it waited for (begin's
// givenUp): their leases are void, and the server, which answers no ack
// above its next delivery, most likely left them unanswered. Each then
// stops waiting and is LEASE_EXPIRED, rather than UNAVAILABLE after its
// request timeout. A settle begun after the last void is never given up
// on: its lease may be live.
type inFlight struct {
	mu     sync.Mutex
	gen    uint64         // the generation settles begin in now
	counts map[uint64]int // settles in flight, by generation
	ended  chan struct{}  // closed, and replaced, as a generation's last ends
	// voidedUpTo is the last generation a void closed: the settles begun in
	// it or before began before a void (none while voids is 0).
	voidedUpTo, voids uint64
	// givenUp ends once a drain gave up on the settles of the current
	// generation (giveUp); closed are the ends of the generations voids
	// closed, not yet given up on or drained.
	givenUp context.Context
	giveUp  context.CancelFunc
	closed  map[uint64]context.CancelFunc
	gaveUp  *atomic.Uint64 // counts the drains that gave up; nil: none
}

// init makes the maps and the current generation's context, on first use;
// f.mu is held.
func (f *inFlight) init() {
	f.counts, f.ended, f.closed = make(map[uint64]int), make(chan struct{}), make(map[uint64]context.CancelFunc)
	f.givenUp, f.giveUp = context.WithCancel(context.Background())
}

// begin notes a settle about to Begin, in the generation it returns; the
// settle calls end with it once the server answered, or it gave up.
// givenUp ends if a drain gives up waiting for it.
func (f *inFlight) begin() (gen uint64, givenUp context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counts == nil {
		f.init()
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

// voided closes the current generation: every lease was just voided (the
// reset watch calls it as it notices a reset, after the void), so a settle
// begun before now began before a void, and one begun after may hold a live
// lease.
func (f *inFlight) voided() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counts == nil {
		f.init()
	}
	f.voidedUpTo, f.voids = f.gen, f.voids+1
	f.closed[f.gen] = f.giveUp
	f.gen++
	f.givenUp, f.giveUp = context.WithCancel(context.Background())
}

// drain returns once every settle begun before the last void has ended, or
// after drainWait, or once ctx ends; it reports whether they had ended.
// Giving up, it ends the wait of those it waited for (givenUp).
func (f *inFlight) drain(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, drainWait)
	defer cancel()
	f.mu.Lock()
	upTo, voided := f.voidedUpTo, f.voids > 0
	f.mu.Unlock()
	if !voided {
		return true
	}
	for {
		f.mu.Lock()
		busy, ended := false, f.ended
		for g := range f.counts {
			busy = busy || g <= upTo
		}
		f.mu.Unlock()
		if !busy {
			f.close(upTo) // nothing of them left to end
			return true
		}
		select {
		case <-ended:
		case <-ctx.Done():
			f.close(upTo)
			if f.gaveUp != nil {
				f.gaveUp.Add(1)
			}
			return false
		}
	}
}

// close ends the wait of the settles of the generations up to upTo that
// voids closed.
func (f *inFlight) close(upTo uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for g, giveUp := range f.closed {
		if g <= upTo {
			giveUp()
			delete(f.closed, g)
		}
	}
}

// untilVoided is ctx, ended too once givenUp ends if reset then says a
// reset was noticed since the settle began. stop releases it.
func untilVoided(ctx, givenUp context.Context, reset func() bool) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	unregister := context.AfterFunc(givenUp, func() {
		if reset() {
			cancel()
		}
	})
	return ctx, func() {
		unregister()
		cancel()
	}
}
