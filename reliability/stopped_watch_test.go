package reliability

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// earlyTolerance is how far before a lease's deadline a redelivery of its
// message counts as early: the gateway's deadline is a margin before the
// server redelivers, so a plain redelivery comes after it.
const earlyTolerance = time.Second

// stoppedWatch follows the deliveries of TestFaultReplicaStoppedThroughAReset:
// how soon after each reset a caller got a delivery made after it, and the
// messages whose pre-reset tokens the test settles (probed): the reset's
// redeliveries of those are held unanswered until released, and one that
// comes again before its lease's deadline, with no reset in between, was
// sent back by a stale settle.
type stoppedWatch struct {
	*deliveryCheck

	mu     sync.Mutex
	hi     uint64 // the highest consumer sequence handed out since the last reset
	resets []resetMark
	probes map[string]*probed // by message id
	held   int
	early  []string
}

type resetMark struct {
	sent, answered time.Time
	hiBefore       uint64
	counted        bool      // the stopped replica's liveness key was there
	resumed        time.Time // the first delivery after it handed out
}

type probed struct {
	token        string
	at, deadline time.Time
	held         bool
	release      time.Time // zero: held until a release is set
	label        string    // how its pre-reset token was settled
}

// resume is how soon after a reset a delivery made after it was handed out.
type resume struct {
	after   time.Duration // -1: none seen
	counted bool
}

func newStoppedWatch() *stoppedWatch {
	return &stoppedWatch{deliveryCheck: newDeliveryCheck(), probes: make(map[string]*probed)}
}

func (w *stoppedWatch) Delivered(m *jetgatev1.Message, at time.Time) {
	w.deliveryCheck.Delivered(m, at)
	w.mu.Lock()
	defer w.mu.Unlock()
	// The server numbers deliveries from 1 again after a reset: one numbered
	// below half of what was handed out before it is from after it.
	cseq := m.GetMetadata().GetConsumerSeq()
	for i := range w.resets {
		if rm := &w.resets[i]; rm.resumed.IsZero() && at.After(rm.sent) && cseq < rm.hiBefore/2 {
			rm.resumed = at
		}
	}
	w.hi = max(w.hi, cseq)
	p := w.probes[string(m.GetData())]
	if p == nil || p.token == m.GetToken() {
		return
	}
	if p.held && !w.resetBetweenLocked(p.at, at) && at.Before(p.deadline.Add(-earlyTolerance)) {
		w.early = append(w.early, fmt.Sprintf("%s (stream_seq %d) delivered again %v after a delivery held unanswered, %v before its lease's deadline",
			m.GetData(), m.GetMetadata().GetStreamSeq(), at.Sub(p.at).Round(time.Millisecond), p.deadline.Sub(at).Round(time.Millisecond)))
	}
	*p = probed{token: m.GetToken(), at: at, deadline: m.GetLeaseDeadline().AsTime(), release: p.release, label: p.label}
}

// resetBetweenLocked reports whether a reset may have caused a delivery at
// b of a message delivered at a.
func (w *stoppedWatch) resetBetweenLocked(a, b time.Time) bool {
	for _, rm := range w.resets {
		if !rm.sent.After(b) && (rm.answered.IsZero() || !rm.answered.Before(a)) {
			return true
		}
	}
	return false
}

// answer decides as base does, except for a probed message's deliveries
// until its release: those are held unanswered.
func (w *stoppedWatch) answer(base func(*rand.Rand, uint64) Action) func(*rand.Rand, *jetgatev1.Message) Action {
	return func(r *rand.Rand, m *jetgatev1.Message) Action {
		w.mu.Lock()
		p := w.probes[string(m.GetData())]
		hold := p != nil && (p.release.IsZero() || time.Now().Before(p.release))
		if hold && p.token == m.GetToken() && !p.held {
			p.held = true
			w.held++
		}
		w.mu.Unlock()
		if hold {
			return NoAnswer
		}
		return base(r, m.GetMetadata().GetNumDelivered())
	}
}

// probe notes ms, fetched by the test, as probed.
func (w *stoppedWatch) probe(ms []*jetgatev1.Message) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range ms {
		w.probes[string(m.GetData())] = &probed{token: m.GetToken(), at: time.Now(), deadline: m.GetLeaseDeadline().AsTime()}
	}
}

// label names how the pre-reset token of probed message id was settled.
func (w *stoppedWatch) label(id, l string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.probes[id]; p != nil {
		p.label = l
	}
}

// release lets callers answer the probed messages delivered from at on.
func (w *stoppedWatch) release(at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.probes {
		if p.release.IsZero() {
			p.release = at
		}
	}
}

// resetting notes a reset about to be sent and returns its index and how
// many deliveries were handed out before it.
func (w *stoppedWatch) resetting(counted bool) (int, uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.resets = append(w.resets, resetMark{sent: time.Now(), hiBefore: w.hi, counted: counted})
	hi := w.hi
	w.hi = 0
	return len(w.resets) - 1, hi
}

// answered notes when reset i was answered.
func (w *stoppedWatch) answered(i int, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.resets[i].answered = at
}

func (w *stoppedWatch) resumed() []resume {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]resume, len(w.resets))
	for i, rm := range w.resets {
		out[i] = resume{after: -1, counted: rm.counted}
		if !rm.resumed.IsZero() {
			out[i].after = rm.resumed.Sub(rm.sent)
		}
	}
	return out
}

func (w *stoppedWatch) probeVerdict() (held int, early []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.held, append([]string(nil), w.early...)
}

// probeStates says, for a failure's log, what became of each probed
// message: settled or not, and its deliveries.
func (w *stoppedWatch) probeStates(c *Checker) string {
	w.mu.Lock()
	ids := make([]string, 0, len(w.probes))
	labels := make(map[string]string, len(w.probes))
	for id, p := range w.probes {
		ids = append(ids, id)
		labels[id] = p.label
	}
	w.mu.Unlock()
	slices.Sort(ids)
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "\n%s (%s) acked=%v termed=%v deliveries=%d", id, labels[id], c.acked[id], c.termed[id], len(c.deliveries[id]))
	}
	return b.String()
}
