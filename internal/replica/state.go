package replica

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/roster"
	"github.com/jetgate/jetgate/internal/settle"
)

// stateReplicas is how many replicas jetgate's own streams and buckets
// need (the ledger, the roster, the advisories): as many as the most
// replicated stream it serves, so that they survive what the streams do,
// and never fewer than its buckets have already. Another replica, serving
// streams of more replicas from its file, made them so: one that serves
// fewer (on demand alone, say) must not scale them down under it.
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
	for _, bucket := range []string{settle.LedgerBucket, roster.Bucket} {
		if s, err := js.Stream(ctx, "KV_"+bucket); err == nil {
			n = max(n, s.CachedInfo().Config.Replicas)
		}
	}
	return n
}
