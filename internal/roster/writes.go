package roster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// renew puts the liveness key with its TTL.
func (r *Roster) renew(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, RenewEvery)
	defer cancel()
	m := nats.NewMsg(r.kvPrefix + "$KV." + Bucket + "." + livePrefix + r.self)
	m.Header.Set(jetstream.MsgTTLHeader, TTL.String())
	if _, err := r.js.PublishMsg(ctx, m); err != nil {
		return fmt.Errorf("put this replica's liveness key in %s: %w", Bucket, err)
	}
	return nil
}

// writeServes puts the keys of the consumers this replica serves, and tells
// those it names that they are stored; it reports whether it could.
func (r *Roster) writeServes(ctx context.Context) bool {
	r.mu.Lock()
	keys := make([]string, 0, len(r.mine))
	written := make(map[string]*joined, len(r.mine))
	for k, j := range r.mine {
		keys = append(keys, k)
		written[k] = j
	}
	r.mu.Unlock()
	slices.Sort(keys)
	ctx, cancel := context.WithTimeout(ctx, RenewEvery)
	defer cancel()
	rev, err := r.kv.Put(ctx, servesPrefix+r.self, []byte(strings.Join(keys, "\n")))
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("could not write the consumers this replica serves; its peers count it once it can", "err", err)
			r.markDirty()
			r.failed(err)
		}
		return false
	}
	// The lists stored before it counted first: of two replicas that bind
	// a consumer at once, the later counts the earlier before it is told.
	_ = r.countedTo(ctx, rev)
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, j := range written {
		if r.mine[k] == j && j.stored != nil { // not left, nor joined again, since
			j.stored()
			j.stored = nil
		}
	}
	return true
}
