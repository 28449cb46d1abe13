package core

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/settle"
)

// A replica that notices a consumer reset (consumer/reset.go) tells the
// other replicas of the consumer on resetPrefix<stream>.<consumer>, so
// that the leases they issued before it cannot settle a delivery made after
// it either: such a delivery may have gone to any replica, while the stale
// token's settle goes to its issuer. A notice carries the sender's id; a
// replica ignores its own, and answers another's once it has voided its
// leases. The sender waits for those answers before it hands out the
// delivery that showed the reset, so that no settle sent after that
// delivery was handed out gets past a lease from before the reset.
const resetPrefix = "_JETGATE.RESET."

// resetWordWait bounds how long a replica waits for the others to answer
// its word of a reset, holding the delivery that showed it meanwhile: a
// replica that stopped without a word stays on the roster a few seconds.
const resetWordWait = 2 * time.Second

// subscribe listens on the replica's forward subject and for the resets
// other replicas notice, and makes sure the server has both subscriptions
// before anyone is told the replica's id.
func (r *Replica) subscribe() error {
	var err error
	if r.fwdSub, err = r.nc.Subscribe(settle.Subject(r.self), r.onForward); err != nil {
		return fmt.Errorf("subscribe forward subject: %w", err)
	}
	for key, c := range r.consumers {
		sub, err := r.nc.Subscribe(resetPrefix+key.stream+"."+key.name, r.onReset(c))
		if err != nil {
			return fmt.Errorf("subscribe reset subject: %w", err)
		}
		r.resetSubs = append(r.resetSubs, sub)
	}
	if err := r.subscribeLeases(); err != nil {
		return err
	}
	if err := r.nc.FlushTimeout(r.timeout); err != nil {
		return fmt.Errorf("flush subscriptions: %w", err)
	}
	return nil
}

// tellReset is how the consumer stream/name tells its peers (the other
// replicas the roster counts) of a reset it noticed, and waits for them to
// answer. A word lost (NATS away), or a peer that does not answer in
// resetWordWait, leaves the peer to notice the reset itself, from the
// deliveries it receives; the sender logs it.
func (r *Replica) tellReset(stream, name string) func(peers int) {
	subject := resetPrefix + stream + "." + name
	return func(peers int) {
		if err := r.tell(subject, peers); err != nil {
			r.log.Warn("could not tell the other replicas of a consumer reset", "stream", stream, "consumer", name, "err", err)
		}
	}
}

func (r *Replica) tell(subject string, peers int) error {
	word := []byte(r.self.String())
	if peers <= 0 { // none to wait for; one that just joined may still hear it
		return r.nc.Publish(subject, word)
	}
	inbox := r.nc.NewInbox()
	sub, err := r.nc.SubscribeSync(inbox)
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := r.nc.PublishRequest(subject, inbox, word); err != nil {
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

func (r *Replica) onReset(c *consumer.Consumer) nats.MsgHandler {
	return func(m *nats.Msg) {
		if string(m.Data) == r.self.String() {
			return
		}
		c.ResetTold()
		if m.Reply != "" {
			_ = m.Respond(nil)
		}
	}
}
