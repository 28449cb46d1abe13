package consumer

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/jetgate/jetgate/internal/pull"
)

// orphanHold is how long a message that arrived for a canceled Fetch waits
// for the next Fetch, once its pull has ended, before it is nak'ed back.
const orphanHold = 250 * time.Millisecond

// orphan is a leased message whose caller had gone before it could have it,
// or that did not fit its Fetch's response.
type orphan struct {
	d       *Delivery
	from    *pull.Pull // its pull while that may still be open, then nil
	readyAt time.Time  // when it may be nak'ed; zero while its pull is open
	// spare: the rest of a Fetch, the next Fetch's until spareMargin
	// before its lease ends, by the lease table's deadline (cut or
	// re-dated since it came), not the one it came with, or until its
	// pin is gone (orphans_pin.go).
	spare bool
	group string // a spare's priority group
}

// spareMargin is how long before its lease's end the rest of a Fetch that
// no Fetch has taken is nak'ed back.
const spareMargin = time.Second

// orphanPool keeps what callers that left leave behind: the pulls of
// canceled Fetches, which stay open on the server until it ends them
// (JetStream cannot withdraw a pull), every message those pulls received,
// and the leases of ended Consume streams. An orphan goes to the next Fetch,
// or is nak'ed back once its pull has ended and the hold has passed — never
// while the pull is open, or the Nak would send it straight back into the
// same dead pull and burn a delivery each round.
type orphanPool struct {
	receive func(*seqMark, pull.Msg) (*Delivery, bool) // leases a message of the pull marked so
	// live reports whether a delivery is still leased: a reset voids the
	// leases of orphans too, and their tokens would settle nothing.
	live func(*Delivery, time.Time) bool

	mu   sync.Mutex
	open []markedPull // abandoned pulls the server has not ended yet
	held []*orphan    // for the next Fetch, else a Nak
	// returned are leases of ended Consume streams: their caller holds
	// tokens of these very deliveries, so they only wait for their Nak.
	returned []*orphan
	more     chan struct{} // closed when orphans may have come, then replaced
}

func newOrphanPool(receive func(*seqMark, pull.Msg) (*Delivery, bool), live func(*Delivery, time.Time) bool) *orphanPool {
	return &orphanPool{receive: receive, live: live, more: make(chan struct{})}
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
func (o *orphanPool) abandon(p markedPull, now time.Time) {
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

// keep takes deliveries leased for a caller that left before it had them,
// for the next Fetch: from is the pull they came from, nil if it has ended.
func (o *orphanPool) keep(ds []*Delivery, from *pull.Pull, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.held = o.appendFrom(o.held, ds, from, now.Add(orphanHold))
	o.wake()
}

// spare takes deliveries of a Fetch of group that did not fit its response
// (from is their pull, nil if it has ended): they are the next Fetch's, and
// nak'ed back only shortly before their leases end if no Fetch takes them.
func (o *orphanPool) spare(ds []*Delivery, from *pull.Pull, group string, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(o.held)
	o.held = o.appendFrom(o.held, ds, from, now)
	for _, h := range o.held[n:] {
		h.spare, h.group = true, group
	}
	o.wake()
}

// giveBack takes the leases of an ended Consume stream, to be nak'ed once
// last, the pull the stream left open (nil if none), has ended: while it is
// open, a nak'ed message would go straight back into it.
func (o *orphanPool) giveBack(ds []*Delivery, last *pull.Pull, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.returned = o.appendFrom(o.returned, ds, last, now)
}

// appendFrom appends ds as orphans of from, to be nak'ed once it has ended:
// if it has (it is not among the open pulls), from readyAt; o.mu is held.
func (o *orphanPool) appendFrom(list []*orphan, ds []*Delivery, from *pull.Pull, readyAt time.Time) []*orphan {
	if from != nil && !slices.ContainsFunc(o.open, func(p markedPull) bool { return p.Pull == from }) {
		from = nil
	}
	for _, d := range ds {
		h := &orphan{d: d, from: from}
		if from == nil {
			h.readyAt = readyAt
		}
		list = append(list, h)
	}
	return list
}

// drain collects the messages of the open pulls and starts the hold of
// those whose pull has ended; o.mu is held.
func (o *orphanPool) drain(now time.Time) {
	open := o.open[:0]
	for i := range o.open {
		mp := &o.open[i] // in place: receive moves its marks
		msgs, ended, endedAt := mp.Take(now)
		for _, m := range msgs {
			if d, ok := o.receive(&mp.mark, m); ok {
				o.held = append(o.held, &orphan{d: d, from: mp.Pull})
			}
		}
		if !ended {
			open = append(open, *mp)
			continue
		}
		for _, h := range o.held {
			if h.from == mp.Pull {
				h.from, h.readyAt = nil, endedAt.Add(orphanHold)
			}
		}
		for _, h := range o.returned {
			if h.from == mp.Pull {
				h.from, h.readyAt = nil, endedAt
			}
		}
	}
	clear(o.open[len(open):])
	o.open = open
}

// take hands up to n orphans of at most maxBytes in all, whose leases are
// still live, to a Fetch that names pin (or none). An orphan of a pinned
// group's pin goes only to a Fetch that names that pin: its caller would
// learn the pin with it, and share it with the caller that holds it. Those
// past their deadline, or voided by a reset, are dropped: the server
// redelivers them. arrivals is closed when orphans
// may have come after it looked: a Fetch waiting on a pull of its own
// listens to it, so that a message an abandoned pull takes goes to a caller
// already waiting, not only to the next Fetch.
func (o *orphanPool) take(n int, maxBytes int64, pin string, now time.Time) (_ []*orphan, arrivals <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.drain(now)
	var out []*orphan
	var bytes int64
	o.held = slices.DeleteFunc(o.held, func(h *orphan) bool {
		switch size := h.d.size(); {
		case !o.live(h.d, now):
			return true
		case len(out) < n && bytes+size <= maxBytes && forPin(h.d, pin):
			out = append(out, h)
			bytes += size
			return true
		}
		return false
	})
	return out, o.more
}

// forPin reports whether d may go to a Fetch that names pin: d carries no
// pin, or that one.
func forPin(d *Delivery, pin string) bool {
	p := d.Header.Get(pull.PinHeader)
	return p == "" || p == pin
}

// putBack returns orphans a Fetch took but could not hand out, as they were.
func (o *orphanPool) putBack(hs []*orphan) {
	o.mu.Lock()
	o.held = append(o.held, hs...)
	o.mu.Unlock()
}

// due removes and returns the orphans to nak now: those whose pull has
// ended and whose hold has passed, and, of the rest of a Fetch whose pin
// (if any) stands, whose lease ends within spareMargin.
func (o *orphanPool) due(now time.Time) []*Delivery {
	return o.ready(now, func(h *orphan) bool {
		return !now.Before(h.readyAt) && (!h.spare || !o.live(h.d, now.Add(spareMargin)))
	})
}

// ended removes and returns every orphan whose pull has ended, hold or not:
// what a closing consumer naks back.
func (o *orphanPool) ended(now time.Time) []*Delivery {
	return o.ready(now, func(*orphan) bool { return true })
}

// ready removes and returns the orphans whose pull has ended and that pass
// nakNow; those past their deadline or voided are dropped (the server
// redelivers them).
func (o *orphanPool) ready(now time.Time, nakNow func(*orphan) bool) []*Delivery {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.drain(now)
	var out []*Delivery
	pick := func(h *orphan) bool {
		switch {
		case !o.live(h.d, now):
			return true
		case !h.readyAt.IsZero() && nakNow(h):
			out = append(out, h.d)
			return true
		}
		return false
	}
	o.held = slices.DeleteFunc(o.held, pick)
	o.returned = slices.DeleteFunc(o.returned, pick)
	return out
}

// settle waits, until deadline or ctx ends, for what the abandoned pulls
// still bring a closing consumer, so that it naks that back rather than
// leave it to ack_wait: what the server has sent them (a flush of the
// connection, then each pull's handler done), the end of those that are
// no_wait (a Fetch left just after its first pull), both for owedWait at
// most, and the end of those that orphans wait
// on (a Consume stream's, a pusher's, last pull ends within
// consumeMaxWait). A delivery the server has made but not yet written to
// an abandoned pull still open is missed; such pulls end by themselves at
// their expiry.
func (o *orphanPool) settle(ctx context.Context, flush func(context.Context) error, deadline time.Time) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if o.pulls(time.Now()) > 0 {
		_ = flush(ctx) // NATS away: nothing more comes, and ctx bounds the wait
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	brief := time.Now().Add(owedWait)
	for o.onOpenPulls(time.Now()) || time.Now().Before(brief) && o.owing() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// owedWait bounds a closing consumer's wait for what an abandoned pull is
// owed: a message already sent, or a no_wait pull's answer, comes within
// it; a no_wait pull with an expiry that nothing came for (a Fetch's long
// poll left on its first pull) the server holds until it expires.
const owedWait = 250 * time.Millisecond

// owing reports whether an abandoned pull still open is owed what the
// server sent it, or its prompt end (pull.Pull.Owing).
func (o *orphanPool) owing() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.ContainsFunc(o.open, func(p markedPull) bool { return p.Owing() })
}

// pulls counts the abandoned pulls the server has not ended yet.
func (o *orphanPool) pulls(now time.Time) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.drain(now)
	return len(o.open)
}

// onOpenPulls reports whether some orphan waits for its pull to end.
func (o *orphanPool) onOpenPulls(now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.drain(now)
	for _, list := range [][]*orphan{o.held, o.returned} {
		for _, h := range list {
			if h.from != nil {
				return true
			}
		}
	}
	return false
}

// len counts the orphans held.
func (o *orphanPool) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.held) + len(o.returned)
}
