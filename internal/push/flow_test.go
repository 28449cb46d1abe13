package push

import (
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
)

func jobs(n int) []*job {
	out := make([]*job, n)
	for i := range out {
		out[i] = &job{d: &consumer.Delivery{}}
	}
	return out
}

// heldBack is a flow of four jobs, js, whose first three failed in a row.
func heldBack() (f *flow, js []*job) {
	f, js = newFlow(time.Millisecond, time.Second), jobs(4)
	for _, j := range js {
		f.add(j)
	}
	for range 3 {
		f.failedRetryable(f.next(), time.Now())
	}
	return f, js
}

// Three jobs failing in a row hold the endpoint back; an answer that is
// not a success (a Term, a Nak after Retry-After) still shows it reachable
// and ends the hold, so the queued jobs go out.
func TestAnAnswerEndsTheHold(t *testing.T) {
	f, _ := heldBack()
	if _, held := f.state(); !held {
		t.Fatal("three failures in a row did not hold the endpoint back")
	}
	j, _, ok := f.retryDue()
	if !ok || !f.take(j) {
		t.Fatal("nothing to try while held")
	}
	f.answered() // 422: terminated
	if _, held := f.state(); held {
		t.Fatal("still held after the endpoint answered")
	}
	if len(f.queue) != 3 { // the two failed, then the one queued
		t.Fatalf("queue %d; want the failed jobs back and the queued one", len(f.queue))
	}
}

// One message failing again and again does not hold the endpoint back:
// only first failures count.
func TestOneMessageFailingAgainDoesNotHold(t *testing.T) {
	f := newFlow(time.Millisecond, time.Second)
	f.add(jobs(1)[0])
	j := f.next()
	f.failedRetryable(j, time.Now())
	for range 5 {
		r, _, ok := f.retryDue()
		if !ok || !f.take(r) {
			t.Fatal("the failed job is not tried again")
		}
		f.failedRetryable(r, time.Now())
	}
	if _, held := f.state(); held {
		t.Fatal("held back by one message's failures")
	}
}

// Held back, every other try is a queued job: messages that fail on their
// own cannot keep the endpoint held while others wait.
func TestHeldBackTriesAQueuedJobToo(t *testing.T) {
	f, js := heldBack()
	seen := map[*job]bool{}
	for range 4 {
		r, _, ok := f.retryDue()
		if !ok || !f.take(r) {
			t.Fatal("nothing to try while held")
		}
		seen[r] = true
		f.failedRetryable(r, time.Now())
	}
	if !seen[js[3]] {
		t.Fatal("the queued job was never tried while held")
	}
}
