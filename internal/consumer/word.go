package consumer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// The word of a reset to the consumer's other replicas: a replica that
// noticed one (reset.go) says "<sender id> <reset id>" on
// ResetWordPrefix<stream>.<consumer>, as a request, and holds the
// consumer's new deliveries back until each peer the roster counts
// answered (after voiding its leases) or resetWordWait passed. It closes
// the race in which a delivery made after the reset is handed out before a
// peer has seen the request, and is the fallback for a reset a peer could
// not see. Each replica routes the words of the consumers it serves to
// HearResetWord. A replica just bound holds its deliveries until the
// roster stores it (HoldUntilCounted), and the teller brings its count up
// to the roster's before it counts (peers): no peer can hold a lease from
// before the reset uncounted.

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
// reset counts this replica and waits for its answer (tell) before it
// hands out what it pulls, so no lease this replica issued can be settled
// after the reset unheard.
func (s *onServer) HoldUntilCounted() (counted func()) {
	release := s.held.hold()
	t := time.AfterFunc(countWait, release)
	return func() {
		t.Stop()
		release()
	}
}

// HearResetWord takes a word of a reset on the consumer's word subject: a
// peer's voids the leases this replica holds (ResetTold) and is answered
// once they are void; this replica's own word is neither noticed nor
// answered.
func (s *onServer) HearResetWord(m *nats.Msg) {
	sender, id, _ := strings.Cut(string(m.Data), " ")
	if sender == s.self.String() {
		return
	}
	s.ResetTold(id)
	if m.Reply != "" {
		_ = m.Respond(nil)
	}
}

// tell holds the consumer's new deliveries back while its peers are told of
// reset id, until they answered or the word gave up. The word goes on a
// goroutine of its own (Close waits for it): by Deps.OnReset where one is
// set, else by say.
func (s *onServer) tell(id string) {
	if s.onReset == nil && s.nc == nil {
		return
	}
	release := s.held.hold()
	s.words.Go(func() {
		defer release()
		if s.onReset != nil {
			s.onReset(id, s.peers())
			return
		}
		if err := s.say(id, s.peers); err != nil {
			s.log.Warn("could not tell the other replicas of a consumer reset", "err", err)
		}
	})
}

// peers is how many replicas serve the consumer besides this one, as the
// roster counts them once it has caught up with the bucket (Deps.CatchUp):
// its watch may not show a peer that bound a moment ago yet, and such a
// peer hands nothing out before the bucket holds it (HoldUntilCounted).
func (s *onServer) peers() int {
	if s.catchUp != nil {
		ctx, cancel := context.WithTimeout(context.Background(), resetWordWait)
		if err := s.catchUp(ctx); err != nil {
			s.log.Warn("could not bring the count of the consumer's replicas up to date before waiting for their word of a reset; one that just bound may not be waited for", "err", err)
		}
		cancel()
	}
	return s.replicas() - 1
}

// say tells the consumer's peers of reset id, then counts them (count) and
// waits for as many answers. The word goes first, so that a peer that
// started meanwhile does not hear of a reset from before it bound. A word
// lost (NATS away), or a peer that does not answer in resetWordWait, leaves
// the peer to notice the reset itself; the error says how many answered.
func (s *onServer) say(id string, count func() int) error {
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
	deadline := time.Now().Add(resetWordWait)
	peers := count()
	for answered := 0; answered < peers; answered++ {
		if _, err := sub.NextMsg(time.Until(deadline)); err != nil {
			return fmt.Errorf("%d of %d other replicas answered within %v: %w", answered, peers, resetWordWait, err)
		}
	}
	return nil
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
