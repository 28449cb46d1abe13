package core

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/roster"
)

// joinRoster puts the replica on the roster of each of its consumers, so
// that the replicas serving one consumer split its max_waiting between them.
func (r *Replica) joinRoster(ctx, runCtx context.Context) error {
	var err error
	if r.roster, err = roster.Open(ctx, r.js, r.stateReplicas, r.self.String(), r.log); err != nil {
		return err
	}
	for _, c := range r.consumers {
		if err := r.roster.Join(ctx, c.Stream, c.Name, func(n int) { c.SetReplicas(runCtx, n) }); err != nil {
			return err
		}
	}
	return nil
}

// stateReplicas is how many replicas jetgate's own streams and buckets
// need (the ledger, the roster, the advisories): as many as the most
// replicated stream it serves, so that they survive what the streams do.
func stateReplicas(ctx context.Context, js jetstream.JetStream, cs []consumer.Config) int {
	n := 1
	for _, c := range cs {
		if s, err := js.Stream(ctx, c.Stream); err == nil {
			n = max(n, s.CachedInfo().Config.Replicas)
		}
	}
	return n
}
