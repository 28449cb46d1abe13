package consumer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/token"
)

// The word of a reset to the consumer's other replicas: a replica that
// noticed one (reset.go) says "<sender id> <reset id>" on
// ResetWordPrefix<stream>.<consumer>, as a request, and holds the
// consumer's new deliveries back until each peer the roster names answered
// with its id (after voiding its leases) or resetWordWait passed. It
// closes the race in which a delivery made after the reset is handed out
// before a peer has seen the request, and is the fallback for a reset a
// peer could not see. Each replica routes the words of the consumers it
// serves to HearResetWord; one that does not serve the consumer answers
// with its id at once (it holds none of its leases). A replica just bound
// holds its deliveries until the roster stores it (HoldUntilCounted), and
// the teller names its peers once its roster has caught up with NATS, and
// again after they answered, until no new one is named: a peer that bound
// meanwhile is waited for too.

// ResetWordPrefix is the subject prefix of the words of resets between
// replicas: ResetWordPrefix + "<stream>.<consumer>".
const ResetWordPrefix = "_JETGATE.RESET."

// resetWordWait bounds how long a replica waits for the others to answer
// its word of a reset, holding the consumer's new deliveries meanwhile: a
// replica that stopped without a word stays on the roster a few seconds.
const resetWordWait = 2 * time.Second

// countWait bounds how long a consumer just bound holds its deliveries
// until the roster holds this replica as serving it (HoldUntilCounted).
// Past it, the roster cannot write (NATS away), and the consumer delivers
// little meanwhile anyway.
const countWait = 5 * time.Second

// HoldUntilCounted holds the consumer's deliveries back until counted is
// called, or countWait passed: the replica calls it once the roster holds
// this replica as serving the consumer. From then on a peer that notices a
// reset names this replica and waits for its answer (tell) before it
// hands out what it pulls, so no lease this replica issued can be settled
// after the reset unheard.
func (c *Consumer) HoldUntilCounted() (counted func()) {
	release := c.held.hold()
	t := time.AfterFunc(countWait, release)
	return func() {
		t.Stop()
		release()
	}
}

// HearResetWord takes a word of a reset on the consumer's word subject: a
// peer's voids the leases this replica holds (ResetTold) and is answered
// once they are void and the settles begun before have been answered by
// the server (inFlight), the consumer's new deliveries held back until
// then, as a teller's are; this replica's own word is neither noticed nor
// answered.
func (s *onServer) HearResetWord(m *nats.Msg) {
	sender, id, _ := strings.Cut(string(m.Data), " ")
	if sender == s.self.String() {
		return
	}
	s.ResetTold(id)
	// On a goroutine of its own: the relay's one subscription carries the
	// words of every consumer, and a settle may take a while to be answered.
	release := s.held.hold()
	answer := func() {
		if m.Reply != "" {
			_ = m.Respond([]byte(s.self.String()))
		}
	}
	if !s.words.Go(func() {
		defer release()
		ctx, cancel := context.WithTimeout(context.Background(), resetWordWait) // the teller waits no longer
		defer cancel()
		if !s.settles.drain(ctx) {
			s.log.Debug("answering a peer's word of a reset with settles sent before the void still unanswered by the server")
		}
		answer()
	}) {
		release()
		answer() // closed: it serves the consumer no more, as a replica that does not serve it
	}
}

// ResetTold is another replica's word that the consumer was reset: every
// lease this replica holds is void (those of deliveries made after the
// reset come again after ack_wait; none settles a delivery it was not
// issued for), unless this replica noticed that reset itself already. A
// word that names the reset's request (its reply subject) counts as that
// request passing here, by rule 1: the word may overtake the request on
// this replica's own subscription, and the request of a reset a delivery
// showed here must not void the leases of the deliveries made after it.
func (s *onServer) ResetTold(id string) {
	notice := s.resets.noticeRequest
	if id == "" || strings.HasPrefix(id, shownReset) {
		notice = s.resets.noticeID
	}
	if notice(id) {
		s.log.Warn("another replica saw the consumer reset: the leases this replica held are void")
	}
}

// tell holds the consumer's new deliveries back while its peers are told of
// reset id, until they answered and this replica's own settles begun before
// the void were answered by the server, or the word gave up. The word goes
// on a goroutine of its own (Close waits for it): by Deps.OnReset where one
// is set, else by say (none without a connection: the own settles alone).
// The reset is recorded in the ledger first (recordReset), so that no
// replica hands out a delivery after it, told by this word, before a
// replica that was away can read the record (missedResets).
func (s *onServer) tell(id string) {
	at := s.resetAt()
	release := s.held.hold()
	closed := !s.words.Go(func() {
		defer release()
		recordReset(s, at)
		ctx, cancel := context.WithTimeout(context.Background(), resetWordWait)
		defer cancel()
		var own sync.WaitGroup
		own.Go(func() { // alongside the peers' drains
			if !s.settles.drain(ctx) {
				s.log.Debug("handing out a reset's deliveries with settles sent before the void still unanswered by the server")
			}
		})
		defer own.Wait()
		switch {
		case s.onReset != nil:
			s.onReset(id, len(s.peers(ctx)))
			return
		case s.nc == nil:
			return
		}
		if err := s.say(ctx, id); err != nil {
			s.log.Warn("could not tell the other replicas of a consumer reset", "err", err)
		}
	})
	if closed { // the consumer is no longer served here: nothing to hand out
		release()
	}
}

// shareReset records the reset just noticed for the replicas that bind the
// consumer later, on a goroutine of the consumer's: they adopt no token of a
// gone issuer made before it (settler.Adopt). Peers serving it now hear
// the word; this is for those that start after.
func shareReset(s *onServer) {
	at := s.resetAt()
	s.words.Go(func() { recordReset(s, at) })
}

// recordReset records the reset noticed at at in the ledger, within
// resetWordWait: the word, and the deliveries it holds, wait no longer.
func recordReset(s *onServer, at time.Time) {
	if s.resetRecord == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(s.timeout, resetWordWait))
	defer cancel()
	if err := s.resetRecord(ctx, at); err != nil {
		s.log.Warn("could not record a consumer reset for the replicas that bind it later or were away: one may settle a token from before it", "err", err)
	}
}

// resetKept is how long the ledger keeps a reset's record: a day, or twice
// the consumer's longest wait where that is longer. A token from before the
// reset is adopted no later than its start and one wait.
func resetKept(p lease.Policy) time.Duration {
	longest := p.AckWait
	for _, w := range p.BackOff {
		longest = max(longest, w)
	}
	return max(24*time.Hour, 2*longest)
}

// say tells the consumer's peers of reset id and waits, until ctx ends, for
// the answer of each peer named: named once the word went, so that a peer
// that started meanwhile does not hear of a reset from before it bound,
// and named again once they answered, until no new one is. An answer from
// a replica not named yet is kept for when it is; one with no id (a
// replica of an earlier version) stands for any one peer. A peer that does
// not answer is left to notice the reset itself; the error says how many
// answered.
func (s *onServer) say(ctx context.Context, id string) error {
	subject := ResetWordPrefix + s.stream + "." + s.name
	inbox := s.nc.NewInbox()
	sub, err := s.nc.SubscribeSync(inbox)
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := s.nc.PublishRequest(subject, inbox, []byte(s.self.String()+" "+id)); err != nil {
		return err
	}
	answered, waited, anonymous := make(map[string]bool), make(map[string]bool), 0
	heard := func() int {
		n := anonymous
		for peer := range waited {
			if answered[peer] {
				n++
			}
		}
		return min(n, len(waited))
	}
	for {
		named := false
		for _, peer := range s.peers(ctx) {
			named = named || !waited[peer]
			waited[peer] = true
		}
		if !named {
			return nil
		}
		for heard() < len(waited) {
			m, err := sub.NextMsgWithContext(ctx)
			if err != nil {
				return fmt.Errorf("%d of %d other replicas answered within %v: %w", heard(), len(waited), resetWordWait, err)
			}
			if len(m.Data) == 0 {
				anonymous++
			} else {
				answered[string(m.Data)] = true
			}
		}
	}
}

// holdBack holds a consumer's new deliveries back while its peers are told
// of a reset, or may not count this replica yet.
type holdBack struct {
	mu    sync.Mutex
	holds int           // not released
	open  chan struct{} // closed while holds is 0
}

func newHoldBack() *holdBack {
	ch := make(chan struct{})
	close(ch)
	return &holdBack{open: ch}
}

// hold holds deliveries back until release is called, and every other hold
// is released. Calling release again does nothing.
func (h *holdBack) hold() (release func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.holds == 0 {
		h.open = make(chan struct{})
	}
	h.holds++
	return sync.OnceFunc(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.holds--; h.holds == 0 {
			close(h.open)
		}
	})
}

// wait returns once nothing holds deliveries back, or ctx ends.
func (h *holdBack) wait(ctx context.Context) error {
	for {
		h.mu.Lock()
		ch := h.open
		h.mu.Unlock()
		select {
		case <-ch:
			h.mu.Lock()
			current := h.open == ch
			h.mu.Unlock()
			if current {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// tellReset tells the other replicas of a reset a delivery or an info
// showed (this replica's leases are void already). why is for the log.
func (s *onServer) tellReset(why string, attrs ...any) {
	s.log.Warn("the consumer was reset ("+why+"): the leases this replica held are void", attrs...)
	id := shownReset + token.NewIssuerID().String() // unique, as a request's reply subject is
	s.resets.remember(id)
	s.tell(id)
}
