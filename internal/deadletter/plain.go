package deadletter

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// holdPlain is how long an advisory of a consumer this deployment serves
// without a dead letter is held before it is dropped: a rollout of a
// configuration that gives the consumer one copies it meanwhile, on any
// replica of the new configuration (they share the worker's consumer).
var holdPlain = 10 * time.Minute

// unrouted handles an advisory of a consumer the worker has no route for.
// Its subjects stay captured once any configuration gave it a dead letter
// (they are only ever added), and every advisory held waits in the
// worker's room (workerMaxAckPending), which it shares with every
// consumer's: advisories held for ever of a consumer whose dead letter was
// taken out of the configuration, still running out of deliveries, filled
// it, and no other dead letter was copied again (4,200 of them, and a
// Term of another consumer not dead-lettered). So one of a consumer this
// deployment serves without a dead letter is held for holdPlain, then
// dropped: its message ran out while it had none. Another deployment's
// consumer, sharing the advisory stream, is held for as long as it takes:
// that deployment may be down.
func (w *Worker) unrouted(m jetstream.Msg, stream, consumer string) {
	if w.plain[[2]string{stream, consumer}] {
		if md, err := m.Metadata(); err == nil && time.Since(md.Timestamp) >= holdPlain {
			w.log.Debug("dropped the advisory of a consumer served without a dead letter", "stream", stream, "consumer", consumer, "subject", m.Subject())
			_ = m.Ack()
			return
		}
	}
	_ = m.NakWithDelay(retryUnknownAfter)
}
