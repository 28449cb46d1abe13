package consumer

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/lease"
)

// The reset rules, all of them in this file (an info's in reset_applied.go).
//
// A consumer reset (ADR-60) drops the server's pending list and delivers
// messages again with the consumer sequence and the delivered count
// restarted, and the server acks by stream sequence alone: a lease from
// before a reset would settle the delivery made after it. There is no
// advisory and no epoch in the info. A reset is noticed four ways, each
// decided here:
//
//  1. Its request passes (ResetRequested, resetWatch.noticeRequest): every
//     replica subscribes to the reset requests, as the server does. A
//     request may pass after the deliveries it caused, or an info, showed
//     the reset: a reset a delivery or an info showed leaves one request to
//     come (unclaimed), taken to be its own within requestLag, and the next
//     is a reset again.
//  2. A consumer sequence goes back (resetWatch.regressed): the server
//     numbers deliveries as it makes them, so those of one pull only grow,
//     above all its puller had received, or its info counted, before
//     sending it: a delivery at or below either mark comes after a reset.
//  3. The stream-sequence rule (resetWatch.regressed, bySeq): the server
//     first delivers messages in stream order, so a first delivery
//     (delivered once) of a message at or below a stream sequence received
//     before it, in the same epoch, is the server delivering again what it
//     forgot. Not for a consumer of last_per_subject, whose first
//     deliveries start out of order.
//  4. The lease table's Add (resetWatch.admit): a message the table holds
//     comes again, live, with its count restarted.
//
// Besides, a peer's word (HearResetWord in word.go, then ResetTold) and an
// info counting fewer deliveries than were received before it was asked
// (observeInfo) carry a reset noticed elsewhere or shown otherwise; a word
// that names a reset's request counts as that request passing (rule 1),
// since it may overtake the request itself. Each reset has an id (the
// request's reply subject, else one made up, shownReset), so that it voids
// each replica's leases once however many ways it is noticed.
//
// Each pull's marks are kept in its seqMark, on the consumer's side of the
// pull (markedPull). A pull sent before a reset this replica has noticed
// may still bring deliveries from before it: until one shows the reset, it
// neither raises the high mark nor has them leased, nor given back (a Nak
// would give back the reset's delivery of the message, which any caller may
// hold); the server redelivers them after ack_wait. The server keeps its
// waiting pulls through a reset and hands the replay to them in turn,
// numbered from 1: that shows the reset to a pull marked above it, so a
// replica whose marks are low asks the server's count before it marks a
// pull (puller.markNow), and withdraws its pulls from before a reset once
// it notices it (withdraw.go). Within requestLag of the reset noticed last, a
// delivery that shows a reset to a pull from just before it is taken as
// that reset's, as its request would be; else as a reset again (it may be
// a later one).

// seqMark is what the consumer keeps, per pull, to tell a reset from the
// sequences of the pull's deliveries.
type seqMark struct {
	Floor uint64 // the highest consumer sequence seen before the pull was sent
	Last  uint64 // the pull's last delivery's
	Epoch uint64 // the resets noticed when it was sent
	// Leaders is how many new leaders of the consumer were elected when it
	// was sent (LeaderElected): the old leader's deliveries the pull brings
	// after one are dated by the new leader to the second.
	Leaders uint64
	// StreamFloor and StreamLast are the same for stream sequences: the
	// highest seen before the pull was sent, and the highest of its own.
	StreamFloor, StreamLast uint64
	// SureFloor and SureStreamFloor are Floor and StreamFloor less the
	// counts of infos that may be from before the epoch's reset (informed);
	// Unapplied: it was marked before the server was seen to apply it.
	SureFloor, SureStreamFloor uint64
	Unapplied                  bool
}

// resetWatch is the consumer's epoch: the highest sequences received since
// the last reset, how many resets were seen, and the ids of the last ones.
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
	at     time.Time            // when the last reset was noticed
	void   func()               // voids every lease
	voided func()               // told of each reset once the leases are void (inFlight.voided); nil: none
	count  *atomic.Uint64       // resets noticed, for the metrics; nil: not counted
	ids    [recentResets]string // the ids of the last resets noticed, a ring
	next   int
	// unclaimed counts the resets deliveries showed whose requests have not
	// passed yet: each may still come, late, and must not void again.
	unclaimed int
	// created is when the consumer served was made, as the server said
	// (zero: not known). A later one is the consumer deleted and made again
	// under its name; once its deletion was heard (deleted), the next later
	// one is taken as is.
	created time.Time
	deleted bool
	// withdraw withdraws the pulls marked before each new epoch (withdraw.go).
	withdraw func(epoch uint64)
	// unapplied: the epoch began as a reset's request passed, which may be
	// before the server applied it, and nothing has shown it applied since;
	// before is the highest consumer sequence known surely when it began.
	// sure and sureStream are high and stream less what infos that may be
	// from before the reset counted (informed).
	unapplied        bool
	before           uint64
	sure, sureStream uint64
}

// shownReset begins the id a replica makes up for a reset it saw shown
// (by a delivery, an info) rather than requested. A request's id is its
// reply subject, which holds no space, so a peer tells the two apart
// (ResetTold); to a replica of an earlier version either is an opaque id.
const shownReset = "shown "

// recentResets is how many reset ids a watch remembers: more than the ways
// one reset reaches a replica before the next.
const recentResets = 16

// requestLag bounds how late a reset request may reach a replica's
// subscription after the deliveries the reset caused reached its pulls
// (the client library hands each subscription its messages on a goroutine
// of its own, so the two can swap).
const requestLag = time.Second

func newResetWatch(high, stream uint64, bySeq bool, void func()) *resetWatch {
	return &resetWatch{high: high, stream: stream, sure: high, sureStream: stream, bySeq: bySeq, void: void}
}

// noticeID notices reset id, voiding every lease, unless it was noticed
// already (an empty id is always new); it reports whether it was new.
func (w *resetWatch) noticeID(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.noticeIDLocked(id)
}

func (w *resetWatch) noticeIDLocked(id string) bool {
	if id != "" && slices.Contains(w.ids[:], id) {
		return false
	}
	w.rememberLocked(id)
	w.noticeLocked(true)
	w.unclaimed = 0
	return true
}

// noticeRequest notices the reset whose request passed, unless a delivery
// showed a reset less than requestLag ago whose request has not passed yet:
// this is taken to be that request, late, and voiding again would void the
// leases of the deliveries made after it. A second request is a second
// reset, which the server may not have applied yet (unapplied). It reports
// whether it voided.
func (w *resetWatch) noticeRequest(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if id != "" && slices.Contains(w.ids[:], id) { // a peer told of it first
		return false
	}
	if time.Since(w.at) >= requestLag {
		w.unclaimed = 0
	}
	if w.unclaimed > 0 {
		w.unclaimed--
		w.rememberLocked(id)
		return false
	}
	w.noticeIDLocked(id)
	w.unapplied = true
	return true
}

// remember records id as the reset just noticed.
func (w *resetWatch) remember(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rememberLocked(id)
}

func (w *resetWatch) rememberLocked(id string) {
	w.ids[w.next] = id
	w.next = (w.next + 1) % recentResets
}

// mark is what a pull about to be sent records.
func (w *resetWatch) mark() seqMark {
	w.mu.Lock()
	defer w.mu.Unlock()
	return seqMark{Floor: w.high, StreamFloor: w.stream, Epoch: w.epoch,
		SureFloor: w.sure, SureStreamFloor: w.sureStream, Unapplied: w.unapplied}
}

// delivery is what the watch reads of a delivery: its consumer and stream
// sequences and how often it was delivered.
type delivery struct{ cseq, sseq, delivered uint64 }

// regressed reports whether d, to the pull marked m, comes after a reset:
// rules 2 and 3.
func (w *resetWatch) regressed(m *seqMark, d delivery) bool {
	if d.cseq <= m.Floor || d.cseq <= m.Last {
		return true
	}
	return w.bySeq && d.delivered == 1 && (d.sseq <= m.StreamFloor || d.sseq <= m.StreamLast)
}

// admit leases delivery d to the pull marked m with add (the lease table's
// Add, which reports a reset of its own, rule 4: a message it holds came
// again with its count restarted, and it voided the rest). It reports
// whether the delivery showed a reset nobody on this replica had noticed
// yet, and whether it may be from before one noticed since the pull was
// sent (stale: not leased).
func (w *resetWatch) admit(m *seqMark, d delivery, add func() (reset bool)) (reset, stale bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.regressed(m, d) {
		// A pull of this epoch shows a reset nobody noticed: its request
		// may come. One from just before the reset noticed last shows that
		// one within requestLag (its replay: voiding would void the rest of
		// it, and a later reset's request voids when it passes); else it
		// may show a later one, and counts as new.
		switch {
		case m.Epoch == w.epoch && w.guessed(m, d):
			// Shown by an info's count only, one that may be from before
			// the reset noticed last: its replay, as on a pull from before.
		case m.Epoch == w.epoch:
			w.unclaimed++
			fallthrough
		case m.Epoch+1 != w.epoch || time.Since(w.at) >= requestLag:
			w.noticeLocked(true)
			reset = true
		}
		w.applied()                                                      // the server numbers anew
		m.Epoch, m.Floor, m.StreamFloor, m.StreamLast = w.epoch, 0, 0, 0 // the pull is past the reset now
		m.SureFloor, m.SureStreamFloor = 0, 0
	}
	m.Last, m.StreamLast = d.cseq, max(m.StreamLast, d.sseq)
	if m.Epoch != w.epoch {
		return false, true
	}
	w.raise(d.cseq, d.sseq)
	if add() {
		w.noticeLocked(false) // the table voided the others itself
		w.unclaimed++
		m.Epoch, m.Floor, m.StreamFloor, m.SureFloor, m.SureStreamFloor = w.epoch, 0, 0, 0, 0
		w.raise(d.cseq, d.sseq)
		reset = true
	}
	return reset, false
}

func (w *resetWatch) noticeLocked(void bool) {
	if void {
		w.void()
	}
	if w.voided != nil {
		w.voided()
	}
	w.epoch++
	if w.count != nil {
		w.count.Add(1)
	}
	w.unapplied, w.before = false, w.sure // shown (noticeRequest says otherwise)
	w.high, w.stream, w.sure, w.sureStream = 0, 0, 0, 0
	w.at = time.Now()
	if w.withdraw != nil {
		w.withdraw(w.epoch)
	}
}

// What the consumer's server-side owner (onServer) makes of the rules. A
// replica that noticed a reset tells its peers (word.go) and holds the
// consumer's new deliveries back until they have voided theirs: a delivery
// after the reset may have gone to any replica, while a stale token's
// settle goes to its issuer. Nothing else waits, and nothing waits on the
// network under a lock.

// ResetRequested is a reset request for the consumer that passed on NATS
// (id: its reply subject): every lease held is void at once.
func (s *onServer) ResetRequested(id string) {
	if s.resets.noticeRequest(id) {
		s.log.Warn("the consumer was reset (its reset request passed): the leases this replica held are void")
		s.tell(id)
	}
}

// mark is the mark of a pull about to be sent: before the server can
// deliver to it.
func (s *onServer) mark() seqMark {
	m := s.resets.mark()
	m.Leaders = s.leaders.Load()
	return m
}

// resetAt is when the last reset was noticed: leases received before it
// may have been voided by it.
func (s *onServer) resetAt() time.Time { return s.resets.since() }

// admit decides whether delivery d, to the pull marked m, may be leased,
// and leases it with add (the lease table's Add) unless it may be from
// before a reset. A reset it shows is told to the peers; a redelivery that
// came while the lease it replaces still had time left asks the server's
// timing (policy.go).
func (s *onServer) admit(m *seqMark, d delivery, add func() lease.Added) bool {
	var added lease.Added
	reset, stale := s.resets.admit(m, d, func() bool {
		added = add()
		return added == lease.AddedReset
	})
	switch {
	case added == lease.AddedEarly:
		s.redeliveredEarly()
	case reset:
		s.tellReset("a delivery showed it", "stream_seq", d.sseq, "consumer_seq", d.cseq, "delivered", d.delivered)
	case stale:
		s.log.Debug("not leased: a delivery that may be from before a consumer reset", "stream_seq", d.sseq, "consumer_seq", d.cseq)
		return false
	}
	return true
}

// observeInfo is what the owner makes of an info it asked when the watch
// was marked before: one that counts fewer deliveries than this replica
// received before asking shows a reset, which it tells too (its next
// deliveries are numbered above all it has seen in the new count and would
// not show it, while another replica may hold a lease from before it).
func (s *onServer) observeInfo(before seqMark, ci *jetstream.ConsumerInfo) {
	if s.resets.remade(ci.Created) {
		// Its peers see it for themselves: a word would void what they
		// leased of the new consumer since, and so would a record of this
		// late notice in the ledger (shareReset) for those that start.
		s.log.Warn("the consumer was deleted and made again under its name: the leases this replica held are void")
		return
	}
	if s.resets.informed(before, ci.Delivered) {
		s.tellReset("its info counts fewer deliveries than this replica received", "delivered", ci.Delivered.Consumer)
	}
}
