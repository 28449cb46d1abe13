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
// (they are only ever added), and an advisory held waits in the worker's
// room (workerMaxAckPending), which it shares with every consumer's:
// advisories held for ever of a consumer whose dead letter was taken out of
// the configuration, still running out of deliveries, filled it, and no
// other dead letter was copied again (4,200 of them, and a Term of another
// consumer not dead-lettered). So one of a consumer this deployment serves
// without a dead letter is held for holdPlain, then dropped: its message ran
// out while it had none. One of a consumer it does not serve (another
// deployment's, sharing the advisory stream, or one taken out of the
// configuration while something still uses it) is parked in WaitingStream,
// where the replicas that route it copy it (as they hear of it, or start),
// for as long as that stream keeps it, and it holds no room meanwhile.
func (w *Worker) unrouted(m jetstream.Msg, key [2]string, reason string, as []advisory) {
	if !w.plain[key] {
		w.parkOrNak(m, key, reason, as, retryUnknownAfter)
		return
	}
	if md, err := m.Metadata(); err == nil && time.Since(md.Timestamp) >= holdPlain {
		w.log.Debug("dropped the advisory of a consumer served without a dead letter", "stream", key[0], "consumer", key[1], "subject", m.Subject())
		_ = m.Ack()
		return
	}
	_ = m.NakWithDelay(retryUnknownAfter)
}
