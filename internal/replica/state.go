package replica

import (
	"context"
	"errors"
	"fmt"

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
func stateReplicas(ctx context.Context, js jetstream.JetStream, cs []consumer.Config) (int, error) {
	n := 1
	of := func(stream string) error {
		s, err := js.Stream(ctx, stream)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			return nil // made later, or not at all
		case err != nil:
			// Not known is not one: counting it so could scale the
			// buckets down.
			return fmt.Errorf("look up stream %q for the replicas of jetgate's own buckets: %w", stream, err)
		}
		n = max(n, s.CachedInfo().Config.Replicas)
		return nil
	}
	seen := make(map[string]bool)
	for _, c := range cs {
		if seen[c.Stream] {
			continue
		}
		seen[c.Stream] = true
		if err := of(c.Stream); err != nil {
			return 0, err
		}
	}
	for _, bucket := range []string{settle.LedgerBucket, roster.Bucket} {
		if err := of("KV_" + bucket); err != nil {
			return 0, err
		}
	}
	return n, nil
}
