package push

import (
	"sync"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
)

// holdAfter is how many retryable failures in a row, with no success
// between, hold the endpoint back.
const holdAfter = 3

// job is one message to push, from its lease until it is settled.
type job struct {
	d          *consumer.Delivery
	failedAt   time.Time     // its last retryable failure; zero: none
	retryAfter time.Duration // the endpoint's Retry-After at that failure; 0: none
	retry      bool          // the retrier took it: its failure grows the delay
}

// flow decides who pushes what. Up, every worker takes the next job. A
// retryable failure keeps the job's lease and waits: if a push started
// after it succeeds, the failure was the message's own and it is nak'ed
// (its delivery counts, max_deliver applies); after holdAfter failures in a
// row the endpoint is held back, and every failed job is kept. Held back,
// the workers wait and one job at a time is tried again, its delay growing
// within the retry bounds, until one succeeds; then the kept jobs are
// pushed again at full concurrency. So an outage costs no deliveries.
// Its lock is taken only by its own methods.
type flow struct {
	mu       sync.Mutex
	cond     *sync.Cond // up again, or a job arrived, or stopped
	queue    []*job     // to push, in order
	failed   []*job     // retryable failures waiting for a verdict
	inFlight int
	streak   int // retryable failures since the last success
	held     bool
	stopped  bool
	// probeQueued: held back, the next try is a queued job's.
	probeQueued bool
	lastFail    time.Time     // the last retryable failure
	delay       time.Duration // before the next try, while held back or idle with failures
	retryMin    time.Duration
	retryMax    time.Duration
	changed     chan struct{} // for the retrier: something it waits on changed
}

func newFlow(retryMin, retryMax time.Duration) *flow {
	f := &flow{retryMin: retryMin, retryMax: retryMax, delay: retryMin, changed: make(chan struct{}, 1)}
	f.cond = sync.NewCond(&f.mu)
	return f
}

// poke tells the retrier to look again.
func (f *flow) poke() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

func (f *flow) add(j *job) {
	f.mu.Lock()
	f.queue = append(f.queue, j)
	wake := len(f.failed) > 0 // else the retrier has nothing to look at
	f.mu.Unlock()
	f.cond.Signal() // one job, one worker: waking them all would have them fight for it
	if wake {
		f.poke()
	}
}

// next waits for a job a worker may push now; nil once stopped.
func (f *flow) next() *job {
	f.mu.Lock()
	defer f.mu.Unlock()
	for !f.stopped && (f.held || len(f.queue) == 0) {
		f.cond.Wait()
	}
	if f.stopped {
		return nil
	}
	j := f.queue[0]
	f.queue = f.queue[1:]
	f.inFlight++
	j.retry = false
	return j
}

// retryDue returns the job to try next, and when: a failed one, while held
// back or when nothing else is pushed that could tell the endpoint is up.
// Held back, every other try is a queued job instead, so that messages that
// fail on their own cannot keep the endpoint held. ok is false when there
// is none to try.
func (f *flow) retryDue() (j *job, wait time.Duration, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped || len(f.failed) == 0 || (!f.held && (f.inFlight > 0 || len(f.queue) > 0)) {
		return nil, 0, false
	}
	j = f.failed[0]
	if f.held && f.probeQueued && len(f.queue) > 0 {
		j = f.queue[0]
	}
	// A job the endpoint asked to wait waits that long, success or not.
	return j, time.Until(f.lastFail.Add(max(f.delay, min(j.retryAfter, f.retryMax)))), true
}

// take claims j for a try; false if it is neither failed nor queued now (a
// verdict came meanwhile, or a worker took it).
func (f *flow) take(j *job) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, list := range []*[]*job{&f.failed, &f.queue} {
		for i, x := range *list {
			if x == j {
				*list = append((*list)[:i], (*list)[i+1:]...)
				f.inFlight++
				f.probeQueued = !f.probeQueued
				j.retry = true
				return true
			}
		}
	}
	return false
}

// succeeded records a push started at started that the endpoint took. It
// returns the failed jobs that were the messages' own (to nak): those that
// failed before it started, unless the endpoint was held back (then they
// go out again).
func (f *flow) succeeded(started time.Time) (own []*job) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held || len(f.failed) > 0 { // else the retrier has nothing to look at
		defer f.poke()
	}
	f.inFlight--
	f.streak = 0
	f.delay = f.retryMin
	if f.held {
		f.unholdLocked()
		f.cond.Broadcast()
		return nil
	}
	keep := f.failed[:0]
	for _, j := range f.failed {
		if j.failedAt.Before(started) {
			own = append(own, j)
		} else {
			keep = append(keep, j)
		}
	}
	f.failed = keep
	return own
}

// failedRetryable keeps j for a verdict and reports whether the endpoint is
// now held back.
func (f *flow) failedRetryable(j *job, at time.Time) (held bool) {
	defer f.poke()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inFlight--
	j.failedAt, f.lastFail = at, at
	f.failed = append(f.failed, j)
	if j.retry {
		// A retry's failure does not count: one message failing again and
		// again is no sign that the endpoint is down.
		f.delay = min(f.delay*2, f.retryMax)
	} else {
		f.streak++
	}
	if f.streak >= holdAfter {
		f.held = true
	}
	// The endpoint asked for a wait: the next try waits that long at least
	// (at least retry.min, at most retry.max).
	f.delay = max(f.delay, min(j.retryAfter, f.retryMax))
	return f.held
}

// answered records a push the endpoint answered with a verdict other than
// success (its message terminated): the endpoint is reachable, so it is
// held back no more.
func (f *flow) answered() {
	f.mu.Lock()
	f.inFlight--
	f.streak = 0
	f.unholdLocked()
	f.mu.Unlock()
	f.cond.Broadcast()
	f.poke()
}

// dropped records a push that ended with no answer to count: its message
// terminated for a fault of its own, or the push was abandoned.
func (f *flow) dropped() {
	f.mu.Lock()
	f.inFlight--
	f.mu.Unlock()
	f.cond.Broadcast()
	f.poke()
}

// unholdLocked ends holding back: the failed jobs go out again first.
func (f *flow) unholdLocked() {
	if !f.held {
		return
	}
	f.held = false
	for _, j := range f.failed {
		j.failedAt = time.Time{}
	}
	f.queue = append(f.failed, f.queue...)
	f.failed = nil
}

// drop forgets the jobs not in flight: their leases were let go.
func (f *flow) drop() {
	f.mu.Lock()
	f.queue, f.failed = nil, nil
	f.held, f.streak = false, 0
	f.mu.Unlock()
	f.poke()
}

// stop wakes every worker to leave; what is queued or failed is left to
// the stream, which gives it back.
func (f *flow) stop() {
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
	f.cond.Broadcast()
	f.poke()
}

// state is the flow as GetConsumer and /metrics show it.
func (f *flow) state() (inFlight int, held bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inFlight, f.held
}
