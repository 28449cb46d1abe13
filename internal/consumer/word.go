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
// ResetWordPrefix<stream>.<consumer>, as a request when it has peers, and
// holds the consumer's new deliveries back until each peer answered (after
// voiding its leases) or resetWordWait passed. It closes the race in which
// a delivery made after the reset is handed out before a peer has seen the
// request, and is the fallback for a reset a peer could not see. Each
// replica routes the words of the consumers it serves to HearResetWord.

// ResetWordPrefix is the subject prefix of the words of resets between
// replicas: ResetWordPrefix + "<stream>.<consumer>".
const ResetWordPrefix = "_JETGATE.RESET."

// resetWordWait bounds how long a replica waits for the others to answer
// its word of a reset, holding the consumer's new deliveries meanwhile: a
// replica that stopped without a word stays on the roster a few seconds.
const resetWordWait = 2 * time.Second

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

// tell holds the consumer's new deliveries back while its peers (as many as
// the roster counts besides this one) are told of reset id, until they
// answered or the word gave up. The word goes on a goroutine of its own
// (Close waits for it): by Deps.OnReset where one is set, else by say.
func (s *onServer) tell(id string) {
	if s.onReset == nil && s.nc == nil {
		return
	}
	release := s.held.hold()
	peers := s.replicas() - 1
	s.words.Go(func() {
		defer release()
		if s.onReset != nil {
			s.onReset(id, peers)
			return
		}
		if err := s.say(id, peers); err != nil {
			s.log.Warn("could not tell the other replicas of a consumer reset", "err", err)
		}
	})
}

// say tells the consumer's peers of reset id and waits for as many answers
// as it counts peers. A word lost (NATS away), or a peer that does not
// answer in resetWordWait, leaves the peer to notice the reset itself; the
// error says how many answered.
func (s *onServer) say(id string, peers int) error {
	subject := ResetWordPrefix + s.stream + "." + s.name
	word := []byte(s.self.String() + " " + id)
	if peers <= 0 { // none to wait for; one that just joined may still hear it
		return s.nc.Publish(subject, word)
	}
	inbox := s.nc.NewInbox()
	sub, err := s.nc.SubscribeSync(inbox)
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := s.nc.PublishRequest(subject, inbox, word); err != nil {
		return err
	}
	deadline := time.Now().Add(resetWordWait)
	for answered := 0; answered < peers; answered++ {
		if _, err := sub.NextMsg(time.Until(deadline)); err != nil {
			return fmt.Errorf("%d of %d other replicas answered within %v: %w", answered, peers, resetWordWait, err)
		}
	}
	return nil
}

// holdBack holds a consumer's new deliveries back while its peers are told
// of a reset.
type holdBack struct {
	mu   sync.Mutex
	open chan struct{} // closed while nothing holds deliveries back
}

func newHoldBack() *holdBack {
	ch := make(chan struct{})
	close(ch)
	return &holdBack{open: ch}
}

// hold holds deliveries back until release is called (and every later
// hold is released).
func (h *holdBack) hold() (release func()) {
	ch := make(chan struct{})
	h.mu.Lock()
	h.open = ch
	h.mu.Unlock()
	return func() { close(ch) }
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
