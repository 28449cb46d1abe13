package consumer

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/pull"
)

// A consumer reset (ADR-60) drops the server's pending list and delivers
// messages again with the consumer sequence restarted at 1, and the server
// acks by stream sequence alone: a lease from before a reset would settle
// the delivery made after it. There is no advisory, so the reset is told
// from the consumer sequences of deliveries. The server numbers them as it
// delivers, so those of one pull only grow, and every delivery to a pull is
// numbered above every one its puller had received before sending it: a
// delivery at or below either mark comes after a reset.
//
// Stream sequences tell it too, and from what matters: the server first
// delivers messages in stream order, so a first delivery (delivered once)
// of a message at or below a stream sequence delivered before it, in the
// same epoch, is the server delivering again what it forgot. Those are the
// very messages a lease from before the reset may name. (Not for a consumer
// of last_per_subject, whose first deliveries start out of order.)
//
// Each pull's marks are kept in its pull.SeqMark. A pull sent before a
// reset this replica has noticed may still bring deliveries from before it,
// which must not be leased: until one of its deliveries shows the reset, it
// neither raises the high mark nor has its deliveries leased (the server
// redelivers them after ack_wait). The delivery that shows it counts as a
// reset again: a second reset soon after the first looks the same, and
// voiding twice costs redeliveries, never a wrong settle.

// resetWatch is the consumer's side of that rule: the highest consumer
// sequence received since the last reset, and how many resets were seen.
//
// A reset voids the leases (void) under the watch's lock, as it starts a new
// epoch: no delivery of a pull from before it is leased in between, and no
// lease taken after it is voided with those before. Lock order: the watch,
// then the lease table.
type resetWatch struct {
	mu     sync.Mutex
	high   uint64
	stream uint64 // the highest stream sequence received since the last reset
	bySeq  bool   // first deliveries come in stream order: the stream rule holds
	epoch  uint64
	at     time.Time     // when the last reset was noticed
	seen   chan struct{} // a reset was noticed: for Run
	void   func()        // voids every lease
}

func newResetWatch(high, stream uint64, bySeq bool, void func()) *resetWatch {
	return &resetWatch{high: high, stream: stream, bySeq: bySeq, seen: make(chan struct{}, 1), void: void}
}

// mark is what a pull about to be sent records.
func (w *resetWatch) mark() pull.SeqMark {
	w.mu.Lock()
	defer w.mu.Unlock()
	return pull.SeqMark{Floor: w.high, StreamFloor: w.stream, Epoch: w.epoch}
}

// delivery is what the watch reads of a delivery: its consumer and stream
// sequences and how often it was delivered.
type delivery struct{ cseq, sseq, delivered uint64 }

// regressed reports whether d, to the pull marked m, comes after a reset.
func (w *resetWatch) regressed(m *pull.SeqMark, d delivery) bool {
	if d.cseq <= m.Floor || d.cseq <= m.Last {
		return true
	}
	return w.bySeq && d.delivered == 1 && (d.sseq <= m.StreamFloor || d.sseq <= m.StreamLast)
}

// admit leases delivery cseq to the pull marked m with add (the lease
// table's Add, which reports a reset of its own: a message it holds came
// again with its count restarted, and it voided the rest). It reports
// whether the delivery showed a reset nobody on this replica had noticed
// yet, and whether it may be from before one noticed since the pull was
// sent (stale: not leased).
func (w *resetWatch) admit(m *pull.SeqMark, d delivery, add func() (reset bool)) (reset, stale bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.regressed(m, d) {
		// A pull from before a reset noticed since may show that one or a
		// later one: the two cannot be told apart, so it counts as new.
		w.noticeLocked(true)
		reset = true
		m.Epoch, m.Floor, m.StreamFloor, m.StreamLast = w.epoch, 0, 0, 0 // the pull is past the reset now
	}
	m.Last, m.StreamLast = d.cseq, max(m.StreamLast, d.sseq)
	if m.Epoch != w.epoch {
		return false, true
	}
	w.high, w.stream = max(w.high, d.cseq), max(w.stream, d.sseq)
	if add() {
		w.noticeLocked(false) // the table voided the others itself
		m.Epoch, m.Floor, m.StreamFloor = w.epoch, 0, 0
		w.high, w.stream = d.cseq, d.sseq
		reset = true
	}
	return reset, false
}

// informed records what an info the server answered says it has delivered,
// asked when the watch was marked before: a pull sent later is numbered
// above that, and a server that counts less than was received before it
// was asked was reset. It reports such a reset, unless one was noticed
// meanwhile (the info may be from either side of it).
func (w *resetWatch) informed(before pull.SeqMark, delivered jetstream.SequenceInfo) (reset bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.epoch != before.Epoch:
		return false
	case delivered.Consumer < before.Floor, w.bySeq && delivered.Stream < before.StreamFloor:
		w.noticeLocked(true)
		return true
	}
	w.high, w.stream = max(w.high, delivered.Consumer), max(w.stream, delivered.Stream)
	return false
}

// told records another replica's word of a reset, and voids.
func (w *resetWatch) told() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.noticeLocked(true)
}

func (w *resetWatch) noticeLocked(void bool) {
	if void {
		w.void()
	}
	w.epoch++
	w.high, w.stream = 0, 0
	w.at = time.Now()
	select {
	case w.seen <- struct{}{}:
	default:
	}
}

// since is when the last reset was noticed.
func (w *resetWatch) since() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.at
}

// tellReset tells the other replicas of a reset a delivery or an info
// showed (this replica's leases are void already), and waits for them to
// void theirs, before anything this replica receives next is handed out:
// a delivery after the reset may have gone to any replica. why is for the
// log.
func (c *Consumer) tellReset(why string, attrs ...any) {
	if c.onReset != nil {
		c.onReset(c.Replicas() - 1)
	}
	c.log.Warn("the consumer was reset ("+why+"): the leases this replica held are void", attrs...)
}

// ResetTold is another replica's word that the consumer was reset: every
// lease this replica holds is void (those of deliveries made after the
// reset come again after ack_wait; none settles a delivery it was not
// issued for). Only a replica that saw the reset itself tells, so a word
// comes from each replica that saw it before another's word came: one, or
// a few within the time a word takes.
func (c *Consumer) ResetTold() {
	c.resets.told()
	c.log.Warn("another replica saw the consumer reset: the leases this replica held are void")
}

// afterReset gives back the credit of the Consume streams' leases from
// before the last reset: the server has forgotten them, nothing is to be
// settled, and a stream at its limit would wait out their deadlines.
func (c *Consumer) afterReset() {
	c.owners.dropBefore(c.resets.since())
}
