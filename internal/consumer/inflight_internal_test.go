package consumer

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// A drain waits for the settles begun before it, and for no other: a
// settle begun while it waits goes on, and is not waited for; a drain
// gives up when its context ends, or after drainWait.
func TestADrainWaitsForTheSettlesBegunBeforeItAlone(t *testing.T) {
	was := drainWait
	defer func() { drainWait = was }()
	drainWait = time.Minute
	var f inFlight
	before, beforeGivenUp := f.begin()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		f.drain(context.Background())
	}()
	for started := false; !started; runtime.Gosched() {
		f.mu.Lock()
		started = f.gen == 1
		f.mu.Unlock()
	}
	after, afterGivenUp := f.begin() // would block if the drain held settles back
	select {
	case <-drained:
		t.Fatal("drained with a settle begun before it in flight")
	default:
	}
	f.end(before)
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
		t.Fatal("not drained once the settle begun before it ended")
	}
	// The first drain's context ends with it, nothing of its generation
	// left; the settle begun after it is no drain's yet.
	if beforeGivenUp.Err() == nil || afterGivenUp.Err() != nil {
		t.Fatalf("after a drain that saw its settles end: its generation's context %v, the next one's %v; want ended, live",
			beforeGivenUp.Err(), afterGivenUp.Err())
	}

	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan struct{})
	go func() {
		defer close(gaveUp)
		f.drain(ctx) // the settle begun after the first drain is still in flight
	}()
	cancel()
	select {
	case <-gaveUp:
	case <-time.After(5 * time.Second):
		t.Fatal("a drain went on waiting after its context ended")
	}
	if afterGivenUp.Err() == nil {
		t.Fatal("a drain that gave up did not say so to the settle it waited for")
	}
	drainWait = 50 * time.Millisecond
	if f.drain(context.Background()) {
		t.Fatal("a drain reported the settles ended with one in flight past drainWait")
	}
	f.end(after)
	if !f.drain(context.Background()) { // nothing in flight: at once
		t.Fatal("a drain with nothing in flight reported settles unanswered")
	}
}
