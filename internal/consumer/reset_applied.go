package consumer

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A reset is noticed as its request passes on NATS (reset.go, rule 1),
// and the server applies it when it handles the request: an info asked in
// between is answered with the count of deliveries from before the reset.
// Taken as the new epoch's, it would mark the pulls sent next above the
// reset's replay, numbered from 1, which would then show a reset again on
// them, voiding the replay leased here and, by the word, on every peer.
// So until a delivery or an info shows the reset applied, an info that may
// be from before it marks the pulls only as a guess (informed, guessed).

// informed records what an info the server answered says it has delivered,
// asked when the watch was marked before: a pull sent later is numbered
// above that, and a server that counts less than was received before it
// was asked was reset. It reports such a reset, unless one was noticed
// meanwhile (the info may be from either side of it). One asked before the
// epoch's reset showed applied (before.Unapplied) that counts no fewer
// deliveries than were known before its request may be from before it: it
// marks the next pulls still (a later reset's replay shows there), but as
// a guess, and not once the reset showed applied.
func (w *resetWatch) informed(before seqMark, delivered jetstream.SequenceInfo) (reset bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.epoch != before.Epoch:
		return false
	case delivered.Consumer < before.SureFloor, w.bySeq && delivered.Stream < before.SureStreamFloor:
		// Its request may pass later, as one a delivery showed (admit).
		w.noticeLocked(true)
		w.unclaimed++
		return true
	case before.Unapplied && delivered.Consumer >= w.before:
		if w.unapplied { // else the reset showed applied since it was asked: the next info counts surely
			w.high, w.stream = max(w.high, delivered.Consumer), max(w.stream, delivered.Stream)
		}
		return false
	}
	w.applied() // counted after the reset: fewer than before it, or asked after it showed
	w.raise(delivered.Consumer, delivered.Stream)
	return false
}

// applied records that the server applied the epoch's reset: the counts of
// infos that may be from before it mark nothing more.
func (w *resetWatch) applied() {
	w.unapplied = false
	w.high, w.stream = w.sure, w.sureStream
}

// raise raises the marks to consumer and stream sequences surely of the
// epoch.
func (w *resetWatch) raise(cseq, sseq uint64) {
	w.high, w.stream = max(w.high, cseq), max(w.stream, sseq)
	w.sure, w.sureStream = max(w.sure, cseq), max(w.sureStream, sseq)
}

// guessed reports whether d shows a reset to the pull marked m, of this
// epoch, within requestLag of its start, by what infos that may be from
// before it counted (informed) alone.
func (w *resetWatch) guessed(m *seqMark, d delivery) bool {
	sure := seqMark{Floor: m.SureFloor, Last: m.Last, StreamFloor: m.SureStreamFloor, StreamLast: m.StreamLast}
	return time.Since(w.at) < requestLag && !w.regressed(&sure, d)
}
