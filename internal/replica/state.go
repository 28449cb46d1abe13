package replica

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
)

// stateReplicas is how many replicas jetgate's own streams and buckets
// need (the ledger, the roster, the advisories): as many as the most
// replicated stream it serves, so that they survive what the streams do.
func stateReplicas(ctx context.Context, js jetstream.JetStream, cs []consumer.Config) int {
	n := 1
	seen := make(map[string]bool)
	for _, c := range cs {
		if seen[c.Stream] {
			continue
		}
		seen[c.Stream] = true
		if s, err := js.Stream(ctx, c.Stream); err == nil {
			n = max(n, s.CachedInfo().Config.Replicas)
		}
	}
	return n
}
