package roster

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

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

// CatchUp returns once the counts include every replica the bucket held as
// serving a consumer when it was called, or ctx ended (the error says so):
// a peer that bound a moment ago is counted though the watch has not shown
// it yet. It asks the server once.
func (r *Roster) CatchUp(ctx context.Context) error {
	st, err := r.kv.Status(ctx)
	if err != nil {
		return fmt.Errorf("read the state of the KV bucket %s: %w", Bucket, err)
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return fmt.Errorf("the KV bucket %s has no stream state", Bucket)
	}
	last := bs.StreamInfo().State.LastSeq
	for {
		r.mu.Lock()
		rev, advanced := r.rev, r.advanced
		r.mu.Unlock()
		if rev >= last {
			return nil
		}
		select {
		case <-advanced:
		case <-r.watching:
			return fmt.Errorf("the watch of the KV bucket %s has ended (the roster is closing)", Bucket)
		case <-ctx.Done():
			return fmt.Errorf("the roster's watch is at revision %d of %d: %w", rev, last, ctx.Err())
		}
	}
}

// counted notes that the counts include the bucket up to revision rev.
func (r *Roster) counted(rev uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rev > r.rev {
		r.rev = rev
		close(r.advanced)
		r.advanced = make(chan struct{})
	}
}

// Unreached counts the roster's writes that JetStream did not answer (no
// responders, or no answer in time), which it makes every RenewEvery: the
// replica's connection may be up while JetStream is out of its reach (the
// link of its leaf node to the hub down, the hub restarting), and whatever
// passes meanwhile goes unheard, as while the connection is down. Each
// spell is counted within a renewal or two of its start, however idle the
// replica; a shorter one may pass uncounted.
func (r *Roster) Unreached() uint64 { return r.unreached.Load() }

// failed counts a write that got no answer from JetStream (Unreached); a
// write JetStream refused was answered.
func (r *Roster) failed(err error) {
	var api *jetstream.APIError
	if !errors.As(err, &api) {
		r.unreached.Add(1)
	}
}
