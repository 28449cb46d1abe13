package consumer

import (
	"context"
	"slices"
	"sync"
	"time"
)

// waitingPulls is a replica's share of the consumer's max_waiting: the pulls
// it may have open on the server at once. Past max_waiting the server drops
// a pull that asks for heartbeats without a word, so the replicas serving
// one consumer split it between them (SetReplicas). A Fetch that finds every
// place taken waits in line for one, first come first served, for as long
// as it would have waited on the server: a waiting caller costs the gateway
// a goroutine, not a pull.
type waitingPulls struct {
	total int    // the consumer's max_waiting, less one kept free
	woke  func() // after a place is taken or a caller gets in line

	mu    sync.Mutex
	limit int            // places this replica may use
	share int            // its fair share: limit grows towards it
	open  int            // places in use, pulls not yet ended
	line  []*placeWaiter // callers waiting for a place, first come first
}

// placesOf is how many waiting pulls a consumer of max_waiting may have
// open: one fewer, since past max_waiting the server drops a pull that asks
// for heartbeats without a word.
func placesOf(maxWaiting int) int { return max(maxWaiting, 2) - 1 }

type placeWaiter struct {
	granted chan struct{} // closed when the place is the caller's
}

// newWaitingPulls has a replica alone use all of total places.
func newWaitingPulls(total int) *waitingPulls {
	return &waitingPulls{total: total, limit: total, share: total, woke: func() {}}
}

// tryAcquire takes a place if one is free and nobody waits in line for one.
func (w *waitingPulls) tryAcquire() bool {
	w.mu.Lock()
	ok := w.open < w.limit && len(w.line) == 0
	if ok {
		w.open++
	}
	w.mu.Unlock()
	if ok {
		w.woke()
	}
	return ok
}

// acquire takes a place, waiting in line for one until ctx ends or until
// passes. Whether one is free is asked again under the lock it joins the
// line under: one freed since the caller's tryAcquire is taken, not waited
// for.
func (w *waitingPulls) acquire(ctx context.Context, until time.Time) bool {
	w.mu.Lock()
	if w.open < w.limit && len(w.line) == 0 {
		w.open++
		w.mu.Unlock()
		w.woke()
		return true
	}
	pw := &placeWaiter{granted: make(chan struct{})}
	w.line = append(w.line, pw)
	w.mu.Unlock()
	w.woke()

	t := time.NewTimer(time.Until(until))
	defer t.Stop()
	select {
	case <-pw.granted:
		return true
	case <-ctx.Done():
	case <-t.C:
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-pw.granted: // granted as it gave up: pass the place on
		w.open--
		w.grantLocked()
	default:
		w.line = slices.DeleteFunc(w.line, func(o *placeWaiter) bool { return o == pw })
	}
	return false
}

// release frees a place, for the first caller in line.
func (w *waitingPulls) release() {
	w.mu.Lock()
	w.open--
	w.grantLocked()
	w.mu.Unlock()
}

// grantLocked hands free places to the callers in line; w.mu is held.
func (w *waitingPulls) grantLocked() {
	for len(w.line) > 0 && w.open < w.limit {
		close(w.line[0].granted)
		w.line[0] = nil
		w.line = w.line[1:]
		w.open++
	}
}

// refused closes a place the server refused a pull for max_waiting
// (free: the pull's place is still taken, one dropped without a word). It
// had room by the replica's count, but a peer that bound the consumer at
// the same time, before the roster counted either, opened its own places
// too: the limit falls by the place refused, to no more than the replica's
// pulls still hold, and grows back by room. It reports whether any still
// holds one, for the caller to wait in line for; none, and the limit stands
// (clients outside jetgate may hold every place: crowded asks the server).
func (w *waitingPulls) refused(free bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if free {
		w.open--
	}
	if w.open <= 0 {
		w.grantLocked()
		return false
	}
	w.limit = max(1, min(w.limit-1, w.open))
	w.grantLocked()
	return true
}

// setShare sets the replica's fair share. A smaller share takes effect at
// once (places in use above it are given back as their pulls end); a larger
// one only as grow finds the server has room, since other replicas may still
// hold more than their new shares.
func (w *waitingPulls) setShare(share int) {
	w.mu.Lock()
	w.share = share
	w.limit = min(w.limit, share)
	w.mu.Unlock()
}

// join sets the share of a replica that joins others, who may each be at
// their shares: it starts from no place at all and grows by room.
func (w *waitingPulls) join(share int) {
	w.mu.Lock()
	w.share, w.limit = share, 0
	w.mu.Unlock()
}

// belowShare reports whether the limit is below the share.
func (w *waitingPulls) belowShare() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.limit < w.share
}

// grow raises the limit to the places in use plus room, the places the
// server has free, but never above the share.
func (w *waitingPulls) grow(room int) {
	w.mu.Lock()
	w.limit = max(w.limit, min(w.share, w.open+room))
	w.grantLocked()
	w.mu.Unlock()
}

// resize takes the consumer's new max_waiting, less one kept free, shared
// by replicas: a smaller share takes effect at once, a larger one as grow
// finds room (or at once for a replica alone).
func (w *waitingPulls) resize(total, replicas int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.total = total
	w.share = max(1, total/max(replicas, 1))
	if replicas <= 1 {
		w.limit = w.share
	}
	w.limit = min(w.limit, w.share)
	w.grantLocked()
}

// places is the consumer's max_waiting, less one kept free.
func (w *waitingPulls) places() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.total
}

// counts returns the places in use, the limit, and the callers in line.
func (w *waitingPulls) counts() (open, limit, queued int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.open, w.limit, len(w.line)
}

// SetReplicas tells the consumer how many replicas serve it, itself
// included: each may keep an even part of the consumer's max_waiting open.
// Only a replica joining others starts from nothing: one that was alone
// keeps its pulls and gives back what is above its new share. It asks
// nothing of the server: a share grows (growWaiting) only once a caller
// waits in line for a place. It must not block.
func (pl *puller) SetReplicas(n int) {
	share := max(1, pl.waiting.places()/max(n, 1))
	if first := pl.replicas.Swap(int64(n)) == 0; first && n > 1 {
		pl.waiting.join(share)
	} else {
		pl.waiting.setShare(share)
	}
	pl.wake()
}

// growWaiting raises the replica's places towards its share by what the
// server has free, when a caller has to wait for one: at most once every
// growEvery, the cost of one info.
func (pl *puller) growWaiting(ctx context.Context) {
	open, limit, queued := pl.waiting.counts()
	if (queued == 0 && open < limit) || !pl.waiting.belowShare() || !pl.nc.IsConnected() {
		return
	}
	now := time.Now().UnixNano()
	if last := pl.grown.Load(); now-last < int64(growEvery) || !pl.grown.CompareAndSwap(last, now) {
		return
	}
	ci, err := pl.server.ask(ctx, time.Second)
	if err != nil {
		return
	}
	pl.waiting.grow(pl.waiting.places() - ci.NumWaiting)
}

// freePlace gives back the place of the pull of at, once: at its end, or
// when it was found dropped for max_waiting while still open (crowded).
func (pl *puller) freePlace(at *openPull) {
	if at.freed.CompareAndSwap(false, true) {
		pl.waiting.release()
	}
}

// crowded says whether a caller whose pull of at the server refused for
// max_waiting, and who has time left, waits in line again rather than be
// told MAX_WAITING: the replica's other pulls hold places, which its count
// had too many of (waitingPulls.refused), or, none holding one, the server
// has room now (a peer's pulls ended). Only where none of the replica's
// pulls waits and the server has no room (clients outside jetgate hold the
// places) is the caller told. A pull dropped without a word stays open for
// the orphan pool until its expiry; its place goes now.
func (pl *puller) crowded(ctx context.Context, at *openPull) bool {
	if pl.waiting.refused(at.freed.CompareAndSwap(false, true)) {
		return true
	}
	ci, err := pl.server.ask(ctx, time.Second)
	if err != nil {
		return false
	}
	room := pl.waiting.places() - ci.NumWaiting
	if room <= 0 {
		return false
	}
	pl.waiting.grow(room)
	return true
}

// Pulls is how the replica uses its places among the consumer's waiting
// pulls: the pulls it has open, how many it may have, and the Fetches (and
// Consume pulls) waiting in line for a place.
func (pl *puller) Pulls() (open, limit, queued int) { return pl.waiting.counts() }

// Replicas is how many replicas serve the consumer, as last told by
// SetReplicas (1 until then).
func (pl *puller) Replicas() int { return int(max(pl.replicas.Load(), 1)) }
