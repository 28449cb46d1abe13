package roster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jetgate/jetgate/internal/natsname"
)

// Serving names the replicas on the roster of a stream's consumer: those
// that joined it and whose key has not aged out. A replica that stopped
// without a word stays on it until its key ages out (TTL).
func (r *Roster) Serving(ctx context.Context, stream, consumer string) ([]string, error) {
	prefix := natsname.Key(stream, consumer) + "."
	keys, err := r.kv.ListKeysFiltered(ctx, prefix+"*")
	if err != nil {
		return nil, fmt.Errorf("list the roster of consumer %q of stream %q: %w", consumer, stream, err)
	}
	defer func() { _ = keys.Stop() }()
	var ids []string
	for k := range keys.Keys() {
		if id, ok := strings.CutPrefix(k, prefix); ok && !slices.Contains(ids, id) {
			ids = append(ids, id) // a key written while listing may come twice
		}
	}
	return ids, ctx.Err()
}
