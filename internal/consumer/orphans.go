package consumer

import (
	"slices"
	"sync"
	"time"

	"github.com/jetgate/jetgate/internal/pull"
)

// orphanHold is how long a message that arrived for a canceled Fetch waits
// for the next Fetch, once its pull has ended, before it is nak'ed back.
const orphanHold = 250 * time.Millisecond

// orphan is a message whose Fetch had gone before it could be handed out.
type orphan struct {
	d       *Delivery
	from    *pull.Pull // its pull while that may still be open, then nil
	readyAt time.Time  // when it may be nak'ed; zero while its pull is open
	// leased is a lease of an ended Consume: its caller holds a token of
	// this very delivery, so it is never handed to another Fetch.
	leased bool
}

// orphanPool keeps what canceled Fetches leave behind: their pulls, which
// stay open on the server until it ends them (JetStream cannot withdraw a
// pull), and every message those pulls received. An orphan goes to the next
// Fetch, or is nak'ed back once its pull has ended and the hold has passed
// — never while the pull is open, or the Nak would send it straight back
// into the same dead pull and burn a delivery each round.
type orphanPool struct {
	receive func(pull.Msg) (*Delivery, bool) // leases a message

	mu   sync.Mutex
	open []*pull.Pull // abandoned pulls the server has not ended yet
	held []*orphan
	more chan struct{} // closed when orphans may have come, then replaced
}

func newOrphanPool(receive func(pull.Msg) (*Delivery, bool)) *orphanPool {
	return &orphanPool{receive: receive, more: make(chan struct{})}
}

// arrivals is closed when orphans may have come: a Fetch waiting on a pull
// of its own listens to it, so that a message an abandoned pull takes goes
// to a caller already waiting, not only to the next Fetch.
func (o *orphanPool) arrivals() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.more
}

// arrived wakes the Fetches waiting on arrivals.
func (o *orphanPool) arrived() {
	o.mu.Lock()
	o.wake()
	o.mu.Unlock()
}

// wake closes arrivals; o.mu is held.
func (o *orphanPool) wake() {
	close(o.more)
	o.more = make(chan struct{})
}

// abandon takes over a pull whose Fetch has gone: what it received and what
// it still receives becomes orphans.
func (o *orphanPool) abandon(p *pull.Pull, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p.OnMessage(o.arrived)
	o.open = append(o.open, p)
	n := len(o.held)
	o.drain(now)
	if len(o.held) > n {
		o.wake()
	}
}

// keep takes deliveries of an ended pull that no caller will see.
func (o *orphanPool) keep(ds []*Delivery, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, d := range ds {
		o.held = append(o.held, &orphan{d: d, readyAt: now.Add(orphanHold)})
	}
	o.wake()
}

// giveBack takes the leases of an ended Consume, to be nak'ed once last,
// the pull the stream abandoned (if any), has ended: while it is open, a
// nak'ed message would go straight back into it.
func (o *orphanPool) giveBack(ds []*Delivery, last *pull.Pull, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if last != nil && !slices.Contains(o.open, last) {
		last = nil // it has ended already
	}
	for _, d := range ds {
		h := &orphan{d: d, from: last, leased: true}
		if last == nil {
			h.readyAt = now
		}
		o.held = append(o.held, h)
	}
}

// drain collects the messages of the open pulls and starts the hold of
// those whose pull has ended; o.mu is held.
func (o *orphanPool) drain(now time.Time) {
	o.open = slices.DeleteFunc(o.open, func(p *pull.Pull) bool {
		msgs, ended, endedAt := p.Take(now)
		for _, m := range msgs {
			if d, ok := o.receive(m); ok {
				o.held = append(o.held, &orphan{d: d, from: p})
			}
		}
		if !ended {
			return false
		}
		for _, h := range o.held {
			if h.from == p {
				h.from, h.readyAt = nil, endedAt.Add(orphanHold)
			}
		}
		return true
	})
}

// take hands up to n orphans of at most maxBytes in all, whose leases are
// still live, to a Fetch. Those past their deadline are dropped: the server
// redelivers them.
func (o *orphanPool) take(n int, maxBytes int64, now time.Time) []*orphan {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.drain(now)
	var out []*orphan
	var bytes int64
	o.held = slices.DeleteFunc(o.held, func(h *orphan) bool {
		switch size := h.d.size(); {
		case !now.Before(h.d.Deadline):
			return true
		case h.leased:
			// Its caller holds a token for this very delivery: handing it to
			// another would make two holders of one lease.
			return false
		case len(out) < n && bytes+size <= maxBytes:
			out = append(out, h)
			bytes += size
			return true
		}
		return false
	})
	return out
}

// putBack returns orphans a Fetch took but could not hand out, as they were.
func (o *orphanPool) putBack(hs []*orphan) {
	o.mu.Lock()
	o.held = append(o.held, hs...)
	o.mu.Unlock()
}

// due removes and returns the orphans to nak: those whose pull has ended and
// whose hold has passed, or, when closing, all whose pull has ended.
func (o *orphanPool) due(now time.Time, closing bool) []*Delivery {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.drain(now)
	var out []*Delivery
	o.held = slices.DeleteFunc(o.held, func(h *orphan) bool {
		switch {
		case !now.Before(h.d.Deadline):
			return true
		case !h.readyAt.IsZero() && (closing || !now.Before(h.readyAt)):
			out = append(out, h.d)
			return true
		}
		return false
	})
	return out
}

// len counts the orphans held.
func (o *orphanPool) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.held)
}
