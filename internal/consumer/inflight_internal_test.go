package consumer

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// A drain waits for the settles begun before the last void, and for no
// other: a settle begun since goes on, and is neither waited for nor given
// up on; a drain gives up when its context ends, or after drainWait, and
// then ends the wait of those it waited for. With no void yet, a drain has
// nothing to wait for.
func TestADrainWaitsForTheSettlesBegunBeforeTheVoidAlone(t *testing.T) {
	was := drainWait
	defer func() { drainWait = was }()
	drainWait = time.Minute
	var gaveUp atomic.Uint64
	f := inFlight{gaveUp: &gaveUp}
	early, _ := f.begin()
	if !f.drain(context.Background()) {
		t.Fatal("a drain with no void yet waited for a settle")
	}
	f.end(early)

	before, _ := f.begin()
	f.voided()
	after, afterGivenUp := f.begin()
	drained := make(chan bool, 1)
	go func() { drained <- f.drain(context.Background()) }()
	select {
	case <-drained:
		t.Fatal("drained with a settle begun before the void in flight")
	case <-time.After(50 * time.Millisecond):
	}
	f.end(before)
	select {
	case ok := <-drained:
		if !ok {
			t.Fatal("a drain whose settles ended reported them unanswered")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not drained once the settle begun before the void ended")
	}
	if afterGivenUp.Err() != nil {
		t.Fatal("a settle begun after the void was given up on")
	}

	// Another void: the settle begun after the first is now before one.
	f.voided()
	later, laterGivenUp := f.begin()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if f.drain(ctx) {
		t.Fatal("a drain whose context ended reported a settle in flight ended")
	}
	if n := gaveUp.Load(); n != 1 {
		t.Fatalf("%d drains counted given up; want 1", n)
	}
	if afterGivenUp.Err() == nil {
		t.Fatal("a drain that gave up did not say so to the settle it waited for")
	}
	if laterGivenUp.Err() != nil {
		t.Fatal("a drain gave up on a settle begun after the last void")
	}
	drainWait = 20 * time.Millisecond
	f.voided()
	if f.drain(context.Background()) {
		t.Fatal("a drain reported the settles ended with one in flight past drainWait")
	}
	if laterGivenUp.Err() == nil {
		t.Fatal("a drain that gave up after drainWait did not say so")
	}
	f.end(after)
	f.end(later)
	if !f.drain(context.Background()) { // nothing in flight: at once
		t.Fatal("a drain with nothing in flight reported settles unanswered")
	}
	if n := gaveUp.Load(); n != 2 {
		t.Fatalf("%d drains counted given up; want 2", n)
	}
}

// A settle's wait ends with the drain that gave up on it only where a reset
// was noticed since it began: a lease adopted into the table just after a
// void, in the generation the void closed, is live, and its settle waits
// on (a reviewer's interleaving: the void, the adoption, then the
// generation closed).
func TestASettleWaitEndsWithItsDrainOnlyAfterAReset(t *testing.T) {
	for _, reset := range []bool{false, true} {
		givenUp, giveUp := context.WithCancel(context.Background())
		asked := make(chan struct{})
		ctx, stop := untilVoided(context.Background(), givenUp, func() bool { defer close(asked); return reset })
		giveUp()
		<-asked
		if reset {
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
				t.Error("a settle's wait went on after its drain gave up and a reset was noticed since it began")
			}
		} else if ctx.Err() != nil { // asked and answered no: nothing more comes
			t.Error("a settle's wait ended with its drain though no reset was noticed since it began")
		}
		stop()
		if ctx.Err() == nil {
			t.Error("stop did not release the wait")
		}
	}
}
