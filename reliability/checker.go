// Package reliability holds jetgate's fault suite: a Jepsen-style checker of
// what was published, delivered, acked and terminated, and a traffic driver
// that speaks to jetgate as its users do, over gRPC.
package reliability

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// Checker accounts for every message: the sets of confirmed publishes, acks
// and terms, and the multiset of deliveries. Safe for concurrent use.
type Checker struct {
	mu          sync.Mutex
	attempted   map[string]bool // publishes sent, confirmed or not
	published   map[string]time.Time
	acked       map[string]bool
	termed      map[string]bool
	maybe       map[string]bool // a settle was sent but not confirmed
	deliveries  map[string][]time.Time
	dupAfterAck int
	unexpected  []string
	firstWait   []time.Duration // publish → first delivery
	redelivery  []time.Duration // delivery → next delivery of the same message
}

// NewChecker returns an empty checker.
func NewChecker() *Checker {
	return &Checker{
		attempted:  make(map[string]bool),
		published:  make(map[string]time.Time),
		acked:      make(map[string]bool),
		termed:     make(map[string]bool),
		maybe:      make(map[string]bool),
		deliveries: make(map[string][]time.Time),
	}
}

// Attempt records a publish about to be sent.
func (c *Checker) Attempt(id string) {
	c.mu.Lock()
	c.attempted[id] = true
	c.mu.Unlock()
}

// Published records a publish the stream confirmed.
func (c *Checker) Published(id string, at time.Time) {
	c.mu.Lock()
	if _, ok := c.published[id]; !ok {
		c.published[id] = at
	}
	c.mu.Unlock()
}

// Delivered records a delivery handed to a caller.
func (c *Checker) Delivered(id string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.attempted[id] {
		c.unexpected = append(c.unexpected, id)
		return
	}
	prev := c.deliveries[id]
	if len(prev) == 0 {
		if p, ok := c.published[id]; ok {
			c.firstWait = append(c.firstWait, at.Sub(p))
		}
	} else {
		c.redelivery = append(c.redelivery, at.Sub(prev[len(prev)-1]))
	}
	if c.acked[id] {
		c.dupAfterAck++
	}
	delete(c.maybe, id) // back again: that settle did not take
	c.deliveries[id] = append(prev, at)
}

// Acked records a confirmed ack; Termed a confirmed term.
func (c *Checker) Acked(id string) {
	c.mu.Lock()
	c.acked[id] = true
	c.mu.Unlock()
}

// Termed records a confirmed term.
func (c *Checker) Termed(id string) {
	c.mu.Lock()
	c.termed[id] = true
	c.mu.Unlock()
}

// MaybeSettled records an ack or term that was sent but whose outcome is
// unknown (the confirmation timed out). The server may have applied it; if
// not, the message comes back and is settled again.
func (c *Checker) MaybeSettled(id string) {
	c.mu.Lock()
	c.maybe[id] = true
	c.mu.Unlock()
}

// Done reports whether every confirmed publish has been acked or terminated,
// counting settles of unknown outcome.
func (c *Checker) Done() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	lost, _ := c.outstandingLocked()
	return lost == 0
}

// Ambiguous counts the messages whose only settle is of unknown outcome.
func (c *Checker) Ambiguous() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ambiguous := c.outstandingLocked()
	return ambiguous
}

// outstandingLocked counts the confirmed publishes not confirmed settled:
// those with no settle sent at all (lost) and those whose settle may have
// been applied (ambiguous).
func (c *Checker) outstandingLocked() (lost, ambiguous int) {
	for id := range c.published {
		switch {
		case c.acked[id] || c.termed[id]:
		case c.maybe[id]:
			ambiguous++
		default:
			lost++
		}
	}
	return lost, ambiguous
}

// WaitedAtLeast counts the messages whose first delivery to a caller came d
// or more after their publish was confirmed.
func (c *Checker) WaitedAtLeast(d time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, w := range c.firstWait {
		if w >= d {
			n++
		}
	}
	return n
}

// Report is the checker's verdict.
type Report struct {
	Published     int
	Acked         int
	Termed        int
	Deliveries    int
	Lost          int // confirmed publishes never acked or terminated
	Ambiguous     int // settled with an unconfirmed ack or term, and not seen since
	Unexpected    int // deliveries of messages never published
	Redelivered   int // deliveries beyond the first
	DupAfterAck   int // deliveries of a message after its ack was confirmed
	FirstWaitP50  time.Duration
	FirstWaitP99  time.Duration
	FirstWaitMax  time.Duration
	RedeliveryP50 time.Duration
	RedeliveryP99 time.Duration
}

// Report computes the verdict so far.
func (c *Checker) Report() Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := Report{Published: len(c.published), Acked: len(c.acked), Termed: len(c.termed),
		Unexpected: len(c.unexpected), DupAfterAck: c.dupAfterAck}
	r.Lost, r.Ambiguous = c.outstandingLocked()
	for _, ds := range c.deliveries {
		r.Deliveries += len(ds)
		r.Redelivered += len(ds) - 1
	}
	r.FirstWaitP50, r.FirstWaitP99, r.FirstWaitMax = quantiles(c.firstWait)
	r.RedeliveryP50, r.RedeliveryP99, _ = quantiles(c.redelivery)
	return r
}

func quantiles(ds []time.Duration) (p50, p99, max time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[int(q*float64(len(s)-1))].Round(time.Millisecond) }
	return at(0.5), at(0.99), s[len(s)-1].Round(time.Millisecond)
}

func (r Report) String() string {
	return fmt.Sprintf("published=%d acked=%d termed=%d deliveries=%d lost=%d ambiguous=%d unexpected=%d redelivered=%d dup_after_ack=%d first_wait p50=%v p99=%v max=%v redelivery p50=%v p99=%v",
		r.Published, r.Acked, r.Termed, r.Deliveries, r.Lost, r.Ambiguous, r.Unexpected, r.Redelivered, r.DupAfterAck,
		r.FirstWaitP50, r.FirstWaitP99, r.FirstWaitMax, r.RedeliveryP50, r.RedeliveryP99)
}
