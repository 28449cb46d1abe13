package core

import (
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Resets (ADR-60) are noticed as the server notices them: every replica
// subscribes once to the reset requests (resetRequests), which every
// client's reset passes through, and voids the consumer's leases as one
// passes. A replica that noticed one also tells the consumer's other
// replicas on wordPrefix<stream>.<consumer> (the fallback for a reset a
// replica could not see, and the close of the race in which a delivery
// made after the reset is handed out before a peer has seen the request):
// a word carries the sender's id and the reset's; a replica ignores its
// own, and answers another's once it has voided its leases. The sender
// holds the consumer's new deliveries back until the answers came.
const (
	resetRequests = "CONSUMER.RESET." // under the API prefix
	wordPrefix    = "_JETGATE.RESET."
)

// resetWordWait bounds how long a replica waits for the others to answer
// its word of a reset, holding the consumer's new deliveries meanwhile: a
// replica that stopped without a word stays on the roster a few seconds.
const resetWordWait = 2 * time.Second

// subscribe listens on the reset requests, the words of resets, and the
// advisories and requests of events.go.
func (rl *relay) subscribe() error {
	subs := []struct {
		subject string
		handler nats.MsgHandler
	}{
		{rl.api + resetRequests + ">", rl.onResetRequest},
		{wordPrefix + ">", rl.onResetWord},
		{pauseAdvisories + ">", rl.onPause},
		{deleteAdvisories + ">", rl.onDelete},
		{rl.api + createRequests + ">", rl.onUpdate},
		{rl.api + durableCreateRequests + ">", rl.onUpdate},
	}
	for _, s := range subs {
		sub, err := rl.nc.Subscribe(s.subject, s.handler)
		if err != nil {
			return fmt.Errorf("subscribe to %s: %w", s.subject, err)
		}
		rl.subs = append(rl.subs, sub)
	}
	return nil
}

// onResetRequest voids the leases of a consumer this replica serves whose
// reset request passed; the request's reply subject names the reset.
func (rl *relay) onResetRequest(m *nats.Msg) {
	stream, name, ok := strings.Cut(strings.TrimPrefix(m.Subject, rl.api+resetRequests), ".")
	if !ok {
		return
	}
	if c := rl.binder.bound(stream, name); c != nil {
		id := m.Reply
		if id == "" {
			id = nats.NewInbox() // a request nobody waits on: no other replica can name it either
		}
		c.ResetRequested(id)
	}
}

// onResetWord takes another replica's word of a reset: "<sender> <reset id>".
func (rl *relay) onResetWord(m *nats.Msg) {
	sender, id, _ := strings.Cut(string(m.Data), " ")
	if sender == rl.self.String() {
		return
	}
	stream, name, ok := strings.Cut(strings.TrimPrefix(m.Subject, wordPrefix), ".")
	if !ok {
		return
	}
	if c := rl.binder.bound(stream, name); c != nil {
		c.ResetTold(id)
	}
	if m.Reply != "" {
		_ = m.Respond(nil)
	}
}

// tellReset tells the peers of consumer stream/name of reset id and waits
// for them to answer. A word lost (NATS away), or a peer that does not
// answer in resetWordWait, leaves the peer to notice the reset itself; the
// sender logs it.
func (rl *relay) tellReset(stream, name string) func(id string, peers int) {
	subject := wordPrefix + stream + "." + name
	return func(id string, peers int) {
		if err := rl.tell(subject, []byte(rl.self.String()+" "+id), peers); err != nil {
			rl.log.Warn("could not tell the other replicas of a consumer reset", "stream", stream, "consumer", name, "err", err)
		}
	}
}

func (rl *relay) tell(subject string, word []byte, peers int) error {
	if peers <= 0 { // none to wait for; one that just joined may still hear it
		return rl.nc.Publish(subject, word)
	}
	inbox := rl.nc.NewInbox()
	sub, err := rl.nc.SubscribeSync(inbox)
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := rl.nc.PublishRequest(subject, inbox, word); err != nil {
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
