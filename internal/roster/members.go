package roster

import (
	"context"

	"github.com/jetgate/jetgate/internal/natsname"
)

// Serving names the replicas serving a stream's consumer, this one
// included, as this replica last heard: those whose liveness key has not
// aged out and whose list names the consumer. It asks the server nothing.
func (r *Roster) Serving(_ context.Context, stream, consumer string) ([]string, error) {
	key := natsname.Key(stream, consumer)
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := []string{r.self}
	for id := range r.live {
		if r.serves[id][key] {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// Peers names the other replicas serving a stream's consumer once the
// counts include every replica the bucket held when it was called
// (CatchUp): a peer that bound a moment ago is named though the watch has
// not shown it yet. Should it not catch up, the error says why, and the
// peers named are those this replica last heard of.
func (r *Roster) Peers(ctx context.Context, stream, consumer string) ([]string, error) {
	err := r.CatchUp(ctx)
	ids, _ := r.Serving(ctx, stream, consumer)
	return ids[1:], err // ids[0] is this replica
}
