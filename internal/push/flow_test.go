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
		f.failedRetryable(time.Now(), f.next())
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
	f.answered(1) // 422: terminated
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
	f.failedRetryable(time.Now(), j)
	for range 5 {
		r, _, ok := f.retryDue()
		if !ok || !f.take(r) {
			t.Fatal("the failed job is not tried again")
		}
		f.failedRetryable(time.Now(), r)
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
		f.failedRetryable(time.Now(), r)
	}
	if !seen[js[3]] {
		t.Fatal("the queued job was never tried while held")
	}
}

// Held back, with every failed job dropped (their leases lapsed while NATS
// was away), a job queued since is still tried: else nothing would ever be
// pushed again, the workers waiting for the hold to end and the retrier for
// a failed job.
func TestHeldBackWithNothingFailedTriesAQueuedJob(t *testing.T) {
	f, _ := heldBack()
	for {
		r, _, ok := f.retryDue()
		if !ok {
			break
		}
		if !f.take(r) {
			t.Fatal("could not take the job due")
		}
		f.dropped(1) // its lease lapsed: dropped unpushed
	}
	if _, held := f.state(); !held {
		t.Fatal("the hold ended with no answer from the endpoint")
	}
	select { // what was in the changed channel
	case <-f.changed:
	default:
	}
	fresh := jobs(1)[0] // the redelivery, pulled again
	f.add(fresh)
	select {
	case <-f.changed:
	default:
		t.Fatal("a job queued while held did not wake the retrier")
	}
	r, _, ok := f.retryDue()
	if !ok || r != fresh || !f.take(r) {
		t.Fatalf("held back with nothing failed: retryDue gave %v %v; want the queued job", r, ok)
	}
}

// queued adds n jobs that have waited long enough (their batch is due) of
// the given element size.
func queued(f *flow, n int, size int64, added time.Time) []*job {
	js := jobs(n)
	for _, j := range js {
		j.size, j.added = size, added
	}
	f.add(js...)
	return js
}

// A batch takes up to max_messages jobs, and no more than max_bytes holds
// (at least one); what is left goes in the next.
func TestNextBatchTakesWhatFits(t *testing.T) {
	f := newFlow(time.Millisecond, time.Second)
	f.batching = true
	queued(f, 5, 100, time.Now())
	if b := f.nextBatch(3, 1<<20, time.Hour); len(b) != 3 {
		t.Fatalf("a batch of %d, want max_messages 3", len(b))
	}
	if b := f.nextBatch(3, 1<<20, 0); len(b) != 2 {
		t.Fatalf("a batch of %d, want the 2 left once due", len(b))
	}
	queued(f, 5, 100, time.Now())
	if b := f.nextBatch(100, 250, time.Hour); len(b) != 2 {
		t.Fatalf("a batch of %d, want the 2 that 250 bytes hold", len(b))
	}
	big := queued(f, 1, 1000, time.Now().Add(-time.Hour))
	f.queue = append(big, f.queue[:len(f.queue)-1]...) // the big one first
	if b := f.nextBatch(100, 250, time.Hour); len(b) != 1 || b[0] != big[0] {
		t.Fatalf("a batch of %d, want the one larger than max_bytes alone", len(b))
	}
	if inFlight, _ := f.state(); inFlight != 8 {
		t.Fatalf("%d in flight, want 8", inFlight)
	}
}

// A partial batch waits for max_wait from its first job, then goes; jobs
// a body had no room for go back first, due at once.
func TestNextBatchWaitsForMaxWait(t *testing.T) {
	f := newFlow(time.Millisecond, time.Second)
	f.batching = true
	start := time.Now()
	queued(f, 2, 10, start)
	b := f.nextBatch(10, 1<<20, 50*time.Millisecond)
	if len(b) != 2 || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("a batch of %d after %v; want 2 after max_wait", len(b), time.Since(start))
	}
	f.putBack(b[1:])
	if again := f.nextBatch(10, 1<<20, time.Hour); len(again) != 1 || again[0] != b[1] {
		t.Fatalf("put back: %v, want the job put back, at once", again)
	}
}

// Stopped, a worker waiting for a batch to fill leaves.
func TestNextBatchLeavesWhenStopped(t *testing.T) {
	f := newFlow(time.Millisecond, time.Second)
	f.batching = true
	queued(f, 1, 10, time.Now())
	got := make(chan []*job)
	go func() { got <- f.nextBatch(10, 1<<20, time.Hour) }()
	f.stop()
	if b := <-got; b != nil {
		t.Fatalf("stopped, a batch of %d", len(b))
	}
}

// A failed batch is tried again whole: takeBatch takes the jobs that failed
// in one request with the one due.
func TestTakeBatchTakesTheJobsThatFailedTogether(t *testing.T) {
	f := newFlow(time.Millisecond, time.Second)
	f.batching = true
	queued(f, 5, 10, time.Now().Add(-time.Hour))
	first, second := f.nextBatch(3, 1<<20, 0), f.nextBatch(3, 1<<20, 0)
	at := time.Now()
	f.failedRetryable(at, first...)
	f.failedRetryable(at.Add(time.Millisecond), second...)
	j, _, ok := f.retryDue()
	if !ok {
		t.Fatal("nothing due")
	}
	if b := f.takeBatch(j, 10); len(b) != 3 || b[0] != first[0] || b[2] != first[2] {
		t.Fatalf("took %d jobs, want the first batch's 3", len(b))
	}
	if len(f.failed) != 2 {
		t.Fatalf("%d left failed, want the second batch's 2", len(f.failed))
	}
}

// A stream that ends while the endpoint is held back drops its jobs, not
// the hold: the metric and the log still say down, and so must the flow
// (GetConsumer), until one of the next stream's jobs, tried alone, is
// answered.
func TestAStreamEndingKeepsTheHold(t *testing.T) {
	f, _ := heldBack()
	f.drop()
	if _, held := f.state(); !held {
		t.Fatal("the hold ended with the stream")
	}
	if _, _, ok := f.retryDue(); ok {
		t.Fatal("something to try with every job dropped")
	}
	next := jobs(2)
	f.add(next...)
	j, _, ok := f.retryDue()
	if !ok || j != next[0] || !f.take(j) {
		t.Fatalf("held back, the next stream's first job is not tried alone: %v %v", j, ok)
	}
	f.succeeded(time.Now(), 1)
	if _, held := f.state(); held || len(f.queue) != 1 {
		t.Fatalf("after the try succeeded: held %v, %d queued; want up, the other job queued", held, len(f.queue))
	}
}

// A job held back, put back by the success of a push that started before
// the hold (it overlapped the failures: the endpoint served meanwhile), goes
// out as a retry: failing again it does not count towards another hold, and
// a push started after it that succeeds makes its failure its own (nak'ed).
func TestAJobPutBackByASuccessThatOverlappedItsFailureIsARetry(t *testing.T) {
	f := newFlow(time.Millisecond, time.Second)
	f.add(jobs(5)...)
	slow := f.next()
	started := time.Now() // before any failure
	for range 3 {
		f.failedRetryable(time.Now(), f.next())
	}
	if _, held := f.state(); !held || slow == nil {
		t.Fatal("three failures in a row did not hold the endpoint back")
	}
	f.succeeded(started, 1) // the slow push, answered only now
	var again []*job
	for range 3 {
		again = append(again, f.next())
	}
	at := time.Now()
	for _, a := range again {
		if !a.retry {
			t.Fatal("a job put back by an overlapping success is not a retry")
		}
		f.failedRetryable(at, a)
	}
	if _, held := f.state(); held {
		t.Fatal("three put-back jobs failing again held the endpoint back")
	}
	later := f.next() // the queued one, started after those failures
	if own := f.succeeded(at.Add(time.Millisecond), 1); len(own) != 3 || later == nil {
		t.Fatalf("%d failures taken for the messages' own after a later push succeeded; want 3", len(own))
	}
}

// An endpoint up for a moment within an outage (a probe that started after
// the hold succeeds) puts the failed jobs back afresh: down again, they
// hold it back again, and the end of the outage naks none of them. As
// retries, they counted towards no hold, and the first success after the
// outage nak'ed them all: each moment up cost every held message a
// delivery.
func TestAMomentUpWithinAnOutageCostsNoDelivery(t *testing.T) {
	f, _ := heldBack()
	j, _, ok := f.retryDue()
	if !ok || !f.take(j) {
		t.Fatal("nothing to try while held")
	}
	f.succeeded(time.Now(), 1) // the probe, started after the hold: up
	if _, held := f.state(); held {
		t.Fatal("still held after the probe succeeded")
	}
	at := time.Now()
	for range 3 { // down again: the two put back, and the one queued
		n := f.next()
		if n.retry {
			t.Fatal("a job put back by a probe's success is a retry")
		}
		f.failedRetryable(at, n)
	}
	if _, held := f.state(); !held {
		t.Fatal("three failures in a row after a moment up did not hold the endpoint back again")
	}
	p, _, _ := f.retryDue()
	f.take(p)
	if own := f.succeeded(time.Now(), 1); len(own) != 0 {
		t.Fatalf("the end of the outage nak'ed %d held jobs; want none", len(own))
	}
}

// An outage that begins while slow pushes still succeed: a slow push that
// started before the hold succeeds and ends it, putting the failed jobs
// back as retries, and they fail again. Failing one after another with
// nothing else in flight, every held message alike, they hold the endpoint
// back again, and the end of the outage naks none of them. Not counted,
// the endpoint was never held again, and its end nak'ed every held
// message.
func TestAnOutageBegunUnderSlowSuccessesIsHeldBackAgain(t *testing.T) {
	f := newFlow(time.Millisecond, time.Second)
	f.add(jobs(4)...)
	slow := f.next()
	started := time.Now()
	for range 3 {
		f.failedRetryable(time.Now(), f.next())
	}
	f.succeeded(started, 1) // the slow one, answered after the outage began
	if _, held := f.state(); held || slow == nil {
		t.Fatal("still held after the slow push succeeded")
	}
	for range 3 { // pushed again at once, side by side: down
		f.failedRetryable(time.Now(), f.next())
	}
	for i := 0; ; i++ {
		if _, held := f.state(); held {
			break
		}
		if i == 3 {
			t.Fatal("the retries failing one after another, alone, did not hold the endpoint back")
		}
		j, _, ok := f.retryDue()
		if !ok || !f.take(j) {
			t.Fatal("nothing to try")
		}
		f.failedRetryable(time.Now(), j)
	}
	p, _, _ := f.retryDue()
	f.take(p)
	if own := f.succeeded(time.Now(), 1); len(own) != 0 {
		t.Fatalf("the end of the outage nak'ed %d held jobs; want none", len(own))
	}
}
