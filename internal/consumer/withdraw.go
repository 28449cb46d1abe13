package consumer

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/jetgate/jetgate/internal/pull"
)

// The pulls a reset leaves waiting (reset.go). The server keeps them in its
// line and, once the pulls ahead of them were served, hands them what it
// delivers next, numbered anew from 1: above their marks where more pulls
// waited ahead than the consumer had delivered when they were marked (a
// forward seek, then traffic), or where pulls ahead in priority took more
// since. Such a delivery cannot be told from one made before the reset, so
// it is not leased, and comes back only after ack_wait. So a replica that
// notices a reset withdraws its pulls marked before it (pull.Withdraw):
// what the server sent them before it saw that still comes, to be judged
// by their marks as before, and the loop pulls again, marked past the
// reset (pullEnd.retry). Only what the server delivered before it saw the
// withdrawal relies on the marks: a reset's replay to the pulls waiting.

// openPulls are the replica's pulls that have not ended, with the epoch
// each was marked in. Lock order: the reset watch, then openPulls, then
// each pull's own lock.
type openPulls struct {
	mu    sync.Mutex
	pulls map[*openPull]uint64
}

// openPull is a pull's place among the open ones: made before it is sent,
// so that its end, which may come before it is added, removes it.
type openPull struct {
	p     *pull.Pull
	ended bool
	freed atomic.Bool // its place among the replica's was given back (crowded)
}

// add records p, marked in epoch, unless it ended already.
func (o *openPulls) add(at *openPull, p *pull.Pull, epoch uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if at.ended {
		return
	}
	if o.pulls == nil {
		o.pulls = make(map[*openPull]uint64)
	}
	at.p = p
	o.pulls[at] = epoch
}

// remove forgets the pull that ended.
func (o *openPulls) remove(at *openPull) {
	o.mu.Lock()
	defer o.mu.Unlock()
	at.ended = true
	delete(o.pulls, at)
}

// withdrawBefore withdraws the pulls marked before epoch, the one a reset
// just began (resetWatch.noticeLocked, under the watch's lock).
func (o *openPulls) withdrawBefore(epoch uint64) {
	o.mu.Lock()
	var stale []*pull.Pull
	for at, e := range o.pulls {
		if e < epoch {
			stale = append(stale, at.p)
		}
	}
	o.mu.Unlock()
	for _, p := range stale {
		p.Withdraw()
	}
}

// since is when the last reset was noticed.
func (w *resetWatch) since() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.at
}
