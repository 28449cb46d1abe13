// Package roster keeps which replicas serve each consumer, in a JetStream KV
// bucket: every replica puts one key per consumer it serves and renews it,
// a key not renewed ages out, and every replica watches the keys of its
// consumers. Replicas use the count to split what a consumer allows between
// them (its max_waiting), coordinated through NATS alone.
package roster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/natsname"
)

// Bucket is the JetStream KV bucket of the roster.
const Bucket = "jetgate_replicas"

const (
	// RenewEvery is how often a replica renews its keys.
	RenewEvery = 2 * time.Second
	// TTL is how long a key lives without renewal: a replica that stopped
	// without a word leaves the count this long after its last renewal.
	TTL = 3 * RenewEvery
)

// Roster is one replica's entry in the roster, and its view of the others.
type Roster struct {
	kv   jetstream.KeyValue
	self string
	log  *slog.Logger

	ctx    context.Context // ends when the roster is closed
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	keys   []string // this replica's keys, to delete when it leaves
}

// Open creates or updates the roster's bucket (replicas: match the streams')
// for the replica named self.
func Open(ctx context.Context, js jetstream.JetStream, replicas int, self string, log *slog.Logger) (*Roster, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      Bucket,
		Description: "jetgate: the replicas serving each consumer (renewed, aged out)",
		History:     1,
		TTL:         TTL,
		Replicas:    max(replicas, 1),
		// A key that ages out leaves a marker, so that watchers hear of it.
		LimitMarkerTTL: time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("create or update the KV bucket %s: %w", Bucket, err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	return &Roster{kv: kv, self: self, log: log, ctx: rctx, cancel: cancel}, nil
}

// Join puts this replica on the roster of a stream's consumer, keeps it
// there until the roster is closed, and calls changed with the number of
// replicas serving the consumer (itself included): once before it returns,
// then whenever the number changes, from one goroutine.
func (r *Roster) Join(ctx context.Context, stream, consumer string, changed func(n int)) error {
	prefix := natsname.Key(stream, consumer) + "."
	key := prefix + r.self
	if _, err := r.kv.Put(ctx, key, nil); err != nil {
		return fmt.Errorf("join the roster of consumer %q of stream %q: %w", consumer, stream, err)
	}
	// Close deletes the key even if the rest of the join fails.
	r.mu.Lock()
	r.keys = append(r.keys, key)
	r.mu.Unlock()
	w, err := r.kv.Watch(r.ctx, prefix+"*")
	if err != nil {
		return fmt.Errorf("watch the roster of consumer %q of stream %q: %w", consumer, stream, err)
	}
	m := &members{self: r.self, seen: map[string]time.Time{r.self: time.Now()}}
	// The initial values end with a nil entry.
	for initial := true; initial; {
		select {
		case e := <-w.Updates():
			if e == nil {
				initial = false
				break
			}
			m.apply(e, prefix, time.Now())
		case <-ctx.Done():
			_ = w.Stop()
			return ctx.Err()
		}
	}
	n := m.count()
	changed(n)
	r.wg.Go(func() { r.follow(w, m, prefix, key, n, changed) })
	return nil
}

// follow renews key and tracks the roster until the roster is closed.
func (r *Roster) follow(w jetstream.KeyWatcher, m *members, prefix, key string, n int, changed func(int)) {
	defer func() { _ = w.Stop() }()
	renew := time.NewTicker(RenewEvery)
	defer renew.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e != nil {
				m.apply(e, prefix, time.Now())
			}
		case now := <-renew.C:
			ctx, cancel := context.WithTimeout(r.ctx, RenewEvery)
			if _, err := r.kv.Put(ctx, key, nil); err != nil && r.ctx.Err() == nil {
				r.log.Warn("could not renew this replica on the roster", "key", key, "err", err)
			}
			cancel()
			m.prune(now)
		}
		if c := m.count(); c != n {
			n = c
			changed(n)
		}
	}
}

// Close takes this replica off the roster of every consumer it joined.
func (r *Roster) Close(ctx context.Context) {
	r.cancel()
	r.wg.Wait()
	r.mu.Lock()
	keys := r.keys
	r.keys = nil
	r.mu.Unlock()
	for _, k := range keys {
		if err := r.kv.Delete(ctx, k); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			r.log.Warn("could not leave the roster; the key ages out", "key", k, "err", err)
		}
	}
}

// members is one consumer's roster as this replica sees it: each replica and
// when its key was last heard of, by this replica's clock.
type members struct {
	self string
	seen map[string]time.Time
}

func (m *members) apply(e jetstream.KeyValueEntry, prefix string, now time.Time) {
	id, ok := strings.CutPrefix(e.Key(), prefix)
	if !ok || id == m.self {
		return // this replica counts itself while it runs
	}
	switch e.Operation() {
	case jetstream.KeyValuePut:
		m.seen[id] = now
	default:
		delete(m.seen, id)
	}
}

// prune forgets replicas not heard of for longer than a key lives, should
// the marker of a key that aged out have gone missing.
func (m *members) prune(now time.Time) {
	for id, at := range m.seen {
		if id != m.self && now.Sub(at) > TTL+RenewEvery {
			delete(m.seen, id)
		}
	}
}

func (m *members) count() int { return len(m.seen) }
