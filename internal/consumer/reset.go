package consumer

import (
	"sync"
	"time"

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
// Each pull's marks are kept in its pull.SeqMark. A pull sent before a
// reset this replica has noticed may still bring deliveries from before it,
// which must not be leased: until one of its deliveries shows the reset, it
// neither raises the high mark nor has its deliveries leased (the server
// redelivers them after ack_wait), and it does not report the reset again.

// resetWatch is the consumer's side of that rule: the highest consumer
// sequence received since the last reset, and how many resets were seen.
type resetWatch struct {
	mu    sync.Mutex
	high  uint64
	epoch uint64
	at    time.Time     // when the last reset was noticed
	seen  chan struct{} // a reset was noticed: for Run
}

func newResetWatch(high uint64) *resetWatch {
	return &resetWatch{high: high, seen: make(chan struct{}, 1)}
}

// mark is what a pull about to be sent records.
func (w *resetWatch) mark() pull.SeqMark {
	w.mu.Lock()
	defer w.mu.Unlock()
	return pull.SeqMark{Floor: w.high, Epoch: w.epoch}
}

// saw records delivery cseq to the pull marked m and reports whether it
// shows a reset nobody on this replica had noticed yet, or may be from
// before one noticed since the pull was sent (stale: not to be leased).
func (w *resetWatch) saw(m *pull.SeqMark, cseq uint64) (reset, stale bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	regressed := cseq <= m.Floor || cseq <= m.Last
	m.Last = cseq
	if regressed {
		if m.Epoch == w.epoch {
			w.noticeLocked()
			reset = true
		}
		m.Epoch, m.Floor = w.epoch, 0 // the pull is past the reset now
	}
	if m.Epoch != w.epoch {
		return false, true
	}
	w.high = max(w.high, cseq)
	return reset, false
}

// informed records what an info the server answered says it has delivered,
// asked when the watch was marked before: a pull sent later is numbered
// above that, and a server that counts less than was received before it
// was asked was reset. It reports such a reset, unless one was noticed
// meanwhile (the info may be from either side of it).
func (w *resetWatch) informed(before pull.SeqMark, delivered uint64) (reset bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.epoch != before.Epoch:
		return false
	case delivered < before.Floor:
		w.noticeLocked()
		return true
	}
	w.high = max(w.high, delivered)
	return false
}

// notice records a reset told otherwise: by the lease table, from a
// delivery to the pull marked m (a message held delivered again from a
// restarted count), or, m nil, by another replica's word.
func (w *resetWatch) notice(m *pull.SeqMark) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.noticeLocked()
	if m != nil {
		m.Epoch, m.Floor = w.epoch, 0
		w.high = m.Last
	}
}

func (w *resetWatch) noticeLocked() {
	w.epoch++
	w.high = 0
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

// resetNoticed voids every lease held (the server has dropped them all) and
// tells the other replicas at once, before the delivery that showed the
// reset is handed to anyone. why is for the log.
func (c *Consumer) resetNoticed(why string, attrs ...any) {
	c.leases.Void()
	c.tellReset(why, attrs...)
}

func (c *Consumer) tellReset(why string, attrs ...any) {
	if c.onReset != nil {
		c.onReset()
	}
	c.log.Warn("the consumer was reset ("+why+"): the leases this replica held are void", attrs...)
}

// ResetTold is another replica's word that the consumer was reset: every
// lease this replica holds is void (those of deliveries made after the
// reset come again after ack_wait; none settles a delivery it was not
// issued for). Only a replica that saw the reset in a delivery tells, so
// a word comes from each replica that saw it before another's word came:
// one, or a few within the time a word takes.
func (c *Consumer) ResetTold() {
	c.resets.notice(nil)
	c.leases.Void()
	c.log.Warn("another replica saw the consumer reset: the leases this replica held are void")
}

// afterReset gives back the credit of the Consume streams' leases from
// before the last reset: the server has forgotten them, nothing is to be
// settled, and a stream at its limit would wait out their deadlines.
func (c *Consumer) afterReset() {
	c.owners.dropBefore(c.resets.since())
}
