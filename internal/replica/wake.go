package replica

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/roster"
)

// A replica that could not run for a while (stopped with SIGSTOP, frozen by
// its host, starved of CPU) may have slept through a reset: its peers wait
// for its answer to the reset's word at most resetWordWait, then hand out
// the reset's deliveries. When it runs again, the callers' settles that
// waited for it and what NATS told it meanwhile race, each on goroutines of
// their own, and a settle that reached the lease table first would land on
// a delivery made after the reset. So a replica watches its own clock
// (watch), and after a gap it settles nothing until it has taken in what
// NATS sent it before (catchUp): a flush, then the relay's queues drained.
// A replica that runs on has the same race on a loaded machine, in
// milliseconds rather than seconds (an operator's update request that cuts
// leases short, seen by the relay while a settle of one of them goes by):
// every settle waits for what the relay already has in hand.

// stallAfter is the gap after which a replica catches up before settling:
// under resetWordWait, the longest a peer waits for its answer.
const stallAfter = time.Second

// tickEvery is how often the watch notes that the replica runs.
const tickEvery = 100 * time.Millisecond

// wakes is what a replica knows of its own gaps, as monotonic times since
// base (ns). A catch-up counts as of the moment it began, before its flush:
// the server answers the flush's PING after all it had sent by then, and
// nothing later. One that began before a gap ended, its PING sent before
// the replica stopped, covers nothing sent meanwhile: the PONG comes first
// in the socket, before what piled up behind it.
type wakes struct {
	base     time.Time
	last     atomic.Int64 // the watch's last tick
	lastWall atomic.Int64 // the same, on the wall clock (unix ns)
	woke     atomic.Int64 // the end of the last gap the watch saw (0: none)
	caught   atomic.Int64 // the start of the last catch-up done after a gap
	// roster counts the spells JetStream did not answer the roster's
	// writes while the connection was up (roster.Roster.Unreached); nil
	// until it is open.
	roster atomic.Pointer[roster.Roster]
}

// begin starts the clock; the replica calls it as it is made, before
// anything reads it.
func (w *wakes) begin(now time.Time) {
	w.base = now
}

// at is t on the watch's clock.
func (w *wakes) at(t time.Time) int64 { return int64(t.Sub(w.base)) }

// tick notes that the replica runs at now.
func (w *wakes) tick(now time.Time) {
	w.last.Store(w.at(now))
	w.lastWall.Store(now.UnixNano())
}

// gap is how long before now the watch last saw the replica run, by the
// monotonic clock or the wall clock, whichever says longer: the first
// stands still while the host is suspended, the second may be stepped.
func (w *wakes) gap(now time.Time) time.Duration {
	return max(time.Duration(w.at(now)-w.last.Load()), time.Duration(now.UnixNano()-w.lastWall.Load()))
}

// ran notes that the replica ran at t, unless a later time is noted.
func (w *wakes) ran(t time.Time) {
	raise(&w.last, w.at(t))
	raise(&w.lastWall, t.UnixNano())
}

// watch ticks until ctx ends, noting the end of each gap. The first tick is
// set by whoever makes the replica, before watch runs.
func (w *wakes) watch(ctx context.Context) {
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			w.ticked(now, time.Now())
		}
	}
}

// ticked notes a tick of the watch, read at read: a tick the runtime fires
// late carries the time it was due, so a gap before it ends at read.
func (w *wakes) ticked(tick, read time.Time) {
	if w.gap(tick) > stallAfter {
		raise(&w.woke, w.at(read)) // before last moves, so a reader of the new last sees it
	}
	w.ran(tick) // a settle may have noted a later time (behind)
}

// behind reports whether the replica may have slept through something: a
// gap that ended after the last catch-up began. A gap going on at now that
// the watch has not seen yet ends now: it is noted as the watch would.
func (w *wakes) behind(now time.Time) bool {
	if w.gap(now) > stallAfter {
		raise(&w.woke, w.at(now))
		w.ran(now)
	}
	return w.woke.Load() > w.caught.Load()
}

// caughtUp records a catch-up that began at began.
func (w *wakes) caughtUp(began time.Time) { raise(&w.caught, w.at(began)) }

// raise sets v to at, unless it holds a later time.
func raise(v *atomic.Int64, at int64) {
	for {
		c := v.Load()
		if at <= c || v.CompareAndSwap(c, at) {
			return
		}
	}
}

// catchUp makes a settle, or a pull (consumer.Deps.CatchUp), wait for what
// NATS told the replica before it: until the relay has handled every
// message its subscriptions had received (a reset request voids leases, an
// update request cuts them short, each on the subscription's own
// goroutine, which a settle could otherwise overtake, and a pull marked
// before it would have its deliveries taken to be from before the reset).
// When the replica may have slept through something, it first flushes its
// connection, so that every message the server sent before is among them.
// A replica that runs on and whose relay has nothing in hand pays a few
// locked reads a settle or a pull.
func (rl *relay) catchUp(ctx context.Context) error {
	rl.reconnected()
	began := time.Now()
	asleep := rl.wakes.behind(began)
	if !asleep && rl.drained() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, rl.timeout)
	defer cancel()
	if asleep {
		if err := rl.nc.FlushWithContext(ctx); err != nil {
			return fmt.Errorf("%w: catching up with NATS after a pause: %v", errs.ErrUnavailable, err)
		}
	}
	upTo := rl.received()
	for !rl.handledUpTo(upTo) && !rl.drained() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: catching up with what NATS sent: %v", errs.ErrUnavailable, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	if asleep {
		rl.wakes.caughtUp(began)
	}
	return nil
}

// awake catches up with NATS just before a settle is sent, if the replica
// may have slept since the settle began (consumer.Deps.Awake): a process
// stopped between a settle's catchUp and its publish must not send it
// before it has read a reset slept through. It costs a replica that runs
// on two clock readings and a few atomic loads.
func (rl *relay) awake(ctx context.Context) error {
	if !rl.wakes.behind(time.Now()) {
		return nil
	}
	return rl.catchUp(ctx)
}

// drained reports whether the relay's handlers have finished with every
// message NATS delivered to their subscriptions, and none waits. Pending is
// read before Delivered: the client moves a message from one count to the
// other under one lock, so read in this order a message is always in one of
// them (read the other way, one taken between the reads is in neither).
func (rl *relay) drained() bool {
	for i, sub := range rl.subs {
		pending, _, perr := sub.Pending()
		delivered, err := sub.Delivered()
		if err != nil || perr != nil {
			continue // closed: nothing more comes
		}
		if pending > 0 || rl.handled[i].Load() < delivered {
			return false
		}
	}
	return true
}

// received is how many messages each relay subscription has received so
// far, handed to its handler or waiting for it (-1: closed); read as
// drained reads, a message taken between the reads counts twice, never
// none, which is why catchUp also stops once drained.
func (rl *relay) received() []int64 {
	n := make([]int64, len(rl.subs))
	for i, sub := range rl.subs {
		pending, _, perr := sub.Pending()
		delivered, err := sub.Delivered()
		n[i] = delivered + int64(pending)
		if err != nil || perr != nil {
			n[i] = -1
		}
	}
	return n
}

// handledUpTo reports whether each relay handler has finished with the
// messages received counts.
func (rl *relay) handledUpTo(received []int64) bool {
	for i, n := range received {
		if rl.handled[i].Load() < n {
			return false
		}
	}
	return true
}

// spells counts the times the replica may have been out of JetStream's
// reach: its connection's reconnects, and the roster's writes JetStream
// did not answer with the connection up (its leaf node's link to the hub
// down, the hub restarting: roster.Roster.Unreached).
func (rl *relay) spells() uint64 {
	n := rl.nc.Stats().Reconnects
	if ro := rl.wakes.roster.Load(); ro != nil {
		n += ro.Unreached()
	}
	return n
}

// reconnected cuts the leases of every consumer the replica serves, once
// for each time its connection to NATS was made again, or JetStream found
// out of its reach (spells; the server may have restarted:
// consumer.Reconnected), before any settle goes on; each consumer asks
// what passed unheard before its next settle or pull. nats.go counts a
// reconnect as its TCP connection is made, before the handshake that may
// fail (a server not ready, a proxy that drops it), so the cut waits until
// the connection is up, and is made once however many tries it took: until
// then nothing settles.
func (rl *relay) reconnected() {
	if !rl.nc.IsConnected() {
		return
	}
	n := rl.spells()
	if n == rl.reconnects.Load() {
		return
	}
	rl.cutMu.Lock()
	defer rl.cutMu.Unlock()
	if n == rl.reconnects.Load() {
		return // cut by another settle meanwhile
	}
	for _, b := range rl.binder.all() {
		b.c.Reconnected()
	}
	rl.reconnects.Store(n)
}

// followReconnects cuts the leases after a reconnect (reconnected) even
// while nothing settles, so that the leases kept alive are extended by
// their new deadlines, until ctx ends. Apart from the wake watch: asking
// nats.go about its connection waits while it tries to reconnect.
func (rl *relay) followReconnects(ctx context.Context) {
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rl.reconnected()
		}
	}
}
