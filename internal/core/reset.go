package core

import (
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/settle"
)

// A replica that notices a consumer reset (consumer/reset.go) tells the
// other replicas of the consumer on resetPrefix<stream>.<consumer>, so
// that the leases they issued before it cannot settle a delivery made after
// it either: such a delivery may have gone to any replica, while the stale
// token's settle goes to its issuer. A notice carries the sender's id; a
// replica ignores its own.
const resetPrefix = "_JETGATE.RESET."

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
	if err := r.nc.FlushTimeout(r.timeout); err != nil {
		return fmt.Errorf("flush subscriptions: %w", err)
	}
	return nil
}

// tellReset is how the consumer stream/name tells the other replicas of a
// reset it noticed. A notice lost (NATS away) leaves them to notice the
// reset themselves, from the deliveries they receive.
func (r *Replica) tellReset(stream, name string) func() {
	subject := resetPrefix + stream + "." + name
	return func() {
		if err := r.nc.Publish(subject, []byte(r.self.String())); err != nil {
			r.log.Warn("could not tell the other replicas of a consumer reset", "stream", stream, "consumer", name, "err", err)
		}
	}
}

func (r *Replica) onReset(c *consumer.Consumer) nats.MsgHandler {
	return func(m *nats.Msg) {
		if string(m.Data) != r.self.String() {
			c.ResetTold()
		}
	}
}
