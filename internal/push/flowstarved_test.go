package push

import (
	"testing"
	"time"
)

// The flow is starved while all it holds is failed jobs waiting for a
// verdict, one of them failed again on a retry, none queued and none in
// flight, and not paused; it tells the stream once it becomes so. A first
// failure is not enough (the retry may pass: a busy endpoint); a job
// queued, one in flight, or a pause ends it; a success that judges the
// failures their own leaves nothing to wait on.
func TestTheFlowIsStarvedWhileItHoldsOnlyFailures(t *testing.T) {
	f := newFlow(time.Millisecond, time.Second)
	hungry := func() bool {
		select {
		case <-f.hungry:
			return true
		default:
			return false
		}
	}
	js := jobs(2)
	f.add(js[0])
	if f.starved() {
		t.Fatal("starved with a job queued")
	}
	f.failedRetryable(time.Now(), f.next())
	if f.starved() || hungry() {
		t.Fatal("starved before the failure was tried again")
	}
	j, _, ok := f.retryDue()
	if !ok || !f.take(j) {
		t.Fatal("the failure not due for a retry")
	}
	f.failedRetryable(time.Now(), j)
	if !f.starved() || !hungry() {
		t.Fatalf("not starved (or the stream not told) with only a failure held, failed again: starved %v", f.starved())
	}
	f.setPaused(true)
	if f.starved() {
		t.Fatal("starved while paused: nothing is pushed, nothing should be pulled for it")
	}
	f.setPaused(false)
	if !hungry() {
		t.Fatal("the stream not told once the pause ended")
	}
	f.add(js[1])
	if f.starved() {
		t.Fatal("starved with the probe queued")
	}
	started := time.Now()
	probe := f.next()
	if f.starved() || probe != js[1] {
		t.Fatal("starved with the probe in flight")
	}
	if own := f.succeeded(started.Add(time.Millisecond), 1); len(own) != 1 || own[0] != js[0] {
		t.Fatalf("the probe's success judged %d failures the messages' own; want the one", len(own))
	}
	if f.starved() || hungry() {
		t.Fatal("starved with nothing held")
	}
}
