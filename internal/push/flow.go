package push

import (
	"slices"
	"sync"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
)

// holdAfter is how many pushes (requests: a batch is one) failing
// retryably in a row, with no success between, hold the endpoint back.
const holdAfter = 3

// job is one message to push, from its lease until it is settled.
type job struct {
	d          *consumer.Delivery
	failedAt   time.Time     // its last retryable failure; zero: none
	retryAfter time.Duration // the endpoint's Retry-After at that failure; 0: none
	retry      bool          // tried before (the retrier took it, or put back as failing on its own): its failure grows the delay
	alone      bool          // batching, it goes in a batch of its own (flow.alone)
	faulted    bool          // it failed with a 500, the handler's own error, in this delivery (flow.alone)
	last500    bool          // its last try failed with a 500
	added      time.Time     // queued: a batch waits max_wait from its first job's
	size       int64         // of its element in a batch body: estimated, exact once rendered
	elem       []byte        // its element in a batch body, once rendered
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
	// most bounds inFlight for the workers (next), the retrier's push
	// included: a starved pusher's extra message may come while the
	// retrier tries a failure, and must wait for it. 0: no bound.
	most    int
	streak  int // retryable failures since the last success
	held    bool
	heldAt  time.Time // when the endpoint was last held back
	stopped bool
	// paused: the consumer is paused, and nothing is pushed, retries
	// included (DESIGN 11); the leases are kept meanwhile, not nak'ed, so
	// that a pause costs no message a delivery.
	paused bool
	// probeQueued: held back, the next try is a queued job's.
	probeQueued bool
	collecting  bool          // a worker waits for a batch to fill, its timer set
	batching    bool          // workers take batches (nextBatch), not jobs (next)
	lastFail    time.Time     // the last retryable failure
	delay       time.Duration // before the next try, while held back or idle with failures
	retryMin    time.Duration
	retryMax    time.Duration
	changed     chan struct{} // for the retrier: something it waits on changed
	hungry      chan struct{} // for the stream: the pusher is starved (starved)
	// alone holds the messages, by stream sequence, whose failure in a
	// push, a 500, was judged their own, with the delivery that failed:
	// batching, each goes alone when the server delivers it again, so that
	// a message that fails every batch it is in (a poison one) takes no
	// other to max_deliver. A busy or absent endpoint's failures (429, 503,
	// a timeout, a refused connection) mark none: the batch was not at
	// fault, and splitting it would multiply the requests to an endpoint
	// in trouble. At most aloneMax; cleared when full (a message whose mark
	// is lost is batched again, as any).
	alone map[uint64]uint64
}

func newFlow(retryMin, retryMax time.Duration) *flow {
	f := &flow{retryMin: retryMin, retryMax: retryMax, delay: retryMin, changed: make(chan struct{}, 1), hungry: make(chan struct{}, 1)}
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

// add queues the jobs of one pull.
func (f *flow) add(js ...*job) {
	f.mu.Lock()
	for _, j := range js {
		f.aloneLocked(j)
	}
	f.queue = append(f.queue, js...)
	wake := len(f.failed) > 0 || f.held // else the retrier has nothing to look at
	batching := f.batching
	f.mu.Unlock()
	// One job, one worker: waking them all would have them fight for it.
	// Batching, one worker takes them, and wakes another for what is left.
	for range js {
		f.cond.Signal()
		if batching {
			break
		}
	}
	if wake {
		f.poke()
	}
}

// next waits for a job a worker may push now; nil once stopped.
func (f *flow) next() *job {
	f.mu.Lock()
	defer f.mu.Unlock()
	for !f.stopped && (f.held || f.paused || len(f.queue) == 0 || f.most > 0 && f.inFlight >= f.most) {
		f.cond.Wait()
	}
	if f.stopped {
		return nil
	}
	j := f.queue[0]
	f.queue = f.queue[1:]
	f.inFlight++
	return j
}

// retryDue returns the job to try next, and when: a failed one, while held
// back or when nothing else is pushed that could tell the endpoint is up.
// Held back, every other try is a queued job instead, so that messages that
// fail on their own cannot keep the endpoint held, and so is every try when
// no failed job is left (those dropped as their leases lapsed). ok is false
// when there is none to try.
func (f *flow) retryDue() (j *job, wait time.Duration, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	probe := f.held && len(f.queue) > 0 // held back with nothing failed (those dropped as their leases lapsed): a queued job
	if f.stopped || f.paused || len(f.failed) == 0 && !probe || (!f.held && (f.inFlight > 0 || len(f.queue) > 0)) {
		return nil, 0, false
	}
	if len(f.failed) > 0 {
		j = f.failed[0]
	}
	if probe && (f.probeQueued || j == nil) {
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
	found, _ := f.takeLocked(j)
	return found
}

// takeLocked claims j, from the failed jobs or the queue.
func (f *flow) takeLocked(j *job) (found, failed bool) {
	for k, list := range []*[]*job{&f.failed, &f.queue} {
		for i, x := range *list {
			if x == j {
				*list = append((*list)[:i], (*list)[i+1:]...)
				f.inFlight++
				f.probeQueued = !f.probeQueued
				j.retry = true
				return true, k == 0
			}
		}
	}
	return false, false
}

// succeeded records a push of n jobs started at started that the endpoint
// took. It returns the failed jobs that were the messages' own (to nak):
// those that failed before it started, unless the endpoint was held back
// (then they go out again).
func (f *flow) succeeded(started time.Time, n int) (own []*job) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held || len(f.failed) > 0 { // else the retrier has nothing to look at
		defer f.poke()
	}
	f.inFlight -= n
	f.streak = 0
	f.delay = f.retryMin
	defer f.hungerLocked()
	f.cond.Signal() // a place for a worker
	if f.held {
		// A push started before the hold, answered only now, overlapped
		// the failures: the endpoint served meanwhile, and they were the
		// messages' own. One started since (a probe) says it is back.
		f.unholdLocked(started.Before(f.heldAt))
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

// failedRetryable keeps the jobs of one push (one request) for a verdict
// and reports whether the endpoint is now held back.
func (f *flow) failedRetryable(at time.Time, js ...*job) (held bool) {
	defer f.poke()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inFlight -= len(js)
	f.cond.Signal() // a place for a worker
	f.lastFail = at
	defer f.hungerLocked()
	var asked time.Duration // the endpoint's Retry-After
	for _, j := range js {
		j.failedAt = at
		asked = max(asked, j.retryAfter)
	}
	f.failed = append(f.failed, js...)
	// A retry's failure counts only where it is all there is to go by: no
	// other push in flight (which may succeed, and make it the message's
	// own), and other messages failed too. One message failing again and
	// again is no sign that the endpoint is down; retries failing one after
	// another, every held message alike, are (else an outage that began
	// while slow pushes still succeeded was never held back, and its end
	// nak'ed every held message).
	alone := !f.held && f.inFlight == 0 && len(f.failed) > len(js)
	// A message pushed alone for failing on its own before, failing with a
	// 500 again, is no sign of the endpoint either: a few such failing in a
	// row held it back, and the hold's end put them back afresh, round and
	// round, never nak'ed. Failing otherwise (a 503, a refused connection),
	// it counts: an outage met by those alone must hold the endpoint back.
	if !(js[0].alone && js[0].last500) && (!js[0].retry || alone) {
		f.streak++
	}
	if js[0].retry {
		f.delay = min(f.delay*2, f.retryMax)
	}
	if f.streak >= holdAfter && !f.held {
		f.held, f.heldAt = true, at
	}
	// The endpoint asked for a wait: the next try waits that long at least
	// (at least retry.min, at most retry.max).
	f.delay = max(f.delay, min(asked, f.retryMax))
	return f.held
}

// answered records a push of n jobs the endpoint answered with a verdict
// other than success (its messages terminated): the endpoint is reachable,
// so it is held back no more.
func (f *flow) answered(n int) {
	f.mu.Lock()
	f.inFlight -= n
	f.streak = 0
	f.unholdLocked(false)
	f.hungerLocked()
	f.mu.Unlock()
	f.cond.Broadcast()
	f.poke()
}

// dropped records a push of n jobs that ended with no answer to count:
// its messages terminated for a fault of their own, or the push was
// abandoned.
func (f *flow) dropped(n int) {
	f.mu.Lock()
	f.inFlight -= n
	f.hungerLocked()
	f.mu.Unlock()
	f.cond.Broadcast()
	f.poke()
}

// unholdLocked ends holding back: the failed jobs go out again first.
// With own (a push that overlapped their failures succeeded: theirs, not
// the endpoint's), as retries: failing again, they do not hold the
// endpoint back again, and wait for a push started after them to succeed,
// which makes them the messages' own (nak'ed, their deliveries counted).
// Counted afresh, a few messages failing fast while slower ones succeeded
// held the endpoint back, were put back unnak'ed by the next success, and
// went round so for ever, max_deliver never reached. Without (the endpoint
// is back), afresh: down again, they hold it back again, and an outage
// with a moment up in it costs no delivery.
func (f *flow) unholdLocked(own bool) {
	if !f.held {
		return
	}
	f.held = false
	for _, j := range f.failed {
		j.failedAt, j.retry = time.Time{}, own
		j.faulted = j.faulted && own // afresh: its 500 was the outage's
	}
	f.queue = append(f.failed, f.queue...)
	f.failed = nil
}

// drop forgets the jobs not in flight: their leases were let go. An
// endpoint held back stays so, as the metric and the log have it, until
// one of the next stream's pushes is answered.
func (f *flow) drop() {
	f.mu.Lock()
	f.queue, f.failed = nil, nil
	f.mu.Unlock()
	f.poke()
}

// setPaused holds every push while the consumer is paused, and lets them
// go when it is not; it reports whether it was paused before.
func (f *flow) setPaused(paused bool) (was bool) {
	f.mu.Lock()
	was, f.paused = f.paused, paused
	f.hungerLocked()
	f.mu.Unlock()
	if was && !paused {
		f.cond.Broadcast()
	}
	f.poke() // the retrier checks again, or starts to watch the pause
	return was
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

// starved reports whether the pusher has nothing to push (none queued, none
// in flight) but failed jobs waiting for a verdict, one of which failed
// again when tried again. Only another message's push can give the verdict
// (succeeding: the failures were the messages' own; failing too: the
// endpoint is down), and with every lease the stream may hold among them
// (concurrency 1; failed batches over half the leases) none would come: the
// stream pulls one more (Starved), else a poison message was retried at
// its first delivery for ever, max_deliver never reached, and nothing else
// was pushed. The retrier's try comes first: a busy endpoint's failure may
// pass then, and a stream pulling for less than half its room would split
// the batches.
func (f *flow) starved() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.starvedLocked()
}

func (f *flow) starvedLocked() bool {
	return len(f.queue) == 0 && f.inFlight == 0 && !f.paused && !f.stopped && slices.ContainsFunc(f.failed, func(j *job) bool { return j.retry })
}

// hungerLocked tells the stream, once starved, to ask again at once.
func (f *flow) hungerLocked() {
	if f.starvedLocked() {
		select {
		case f.hungry <- struct{}{}:
		default:
		}
	}
}

// isPaused reports whether the consumer is paused, as the flow was told.
func (f *flow) isPaused() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.paused
}
