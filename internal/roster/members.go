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
