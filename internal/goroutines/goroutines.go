// Package goroutines is goroutines with an owner: the owner waits for them
// as it closes, and none starts once it has begun to close.
package goroutines

import "sync"

// Group is goroutines an owner waits for. A WaitGroup must not grow from
// none while it is waited on: a Group takes no goroutine once closed, so
// that one asked for by a callback that comes in late (a NATS handler, an
// RPC) is refused rather than racing the owner's Wait.
type Group struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// Go runs f on a goroutine of the group's, unless the group is closed; it
// reports whether f runs.
func (g *Group) Go(f func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Go(f)
	return true
}

// Close takes no more goroutines; it reports whether this call closed the
// group (false: closed already).
func (g *Group) Close() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	was := g.closed
	g.closed = true
	return !was
}

// Closed reports whether the group is closed.
func (g *Group) Closed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// Wait waits for the goroutines running; once the group is closed, for
// the last of them.
func (g *Group) Wait() { g.wg.Wait() }
