// Package roster keeps which replicas serve each consumer, in one JetStream
// KV bucket, at a cost that does not grow with the number of consumers:
// every replica renews one liveness key (live.<id>, a message TTL ages it
// out) and writes what it serves (serves.<id>, the keys of its consumers)
// only when that changes; every replica watches the whole bucket once.
// Replicas use the count to split what a consumer allows between them (its
// max_waiting), coordinated through NATS alone.
package roster

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/natsname"
)

// Bucket is the JetStream KV bucket of the roster.
const Bucket = "jetgate_members"

const (
	// RenewEvery is how often a replica renews its liveness key.
	RenewEvery = 3 * time.Second
	// TTL is how long a liveness key lives without renewal: a replica that
	// stopped without a word leaves the count this long after its last
	// renewal (or, should the marker of its key go missing, a renewal
	// later, by each replica's own clock).
	TTL = 3 * RenewEvery
	// writeGap spaces the writes of what a replica serves, so that binding
	// many consumers at once writes the list a few times, not once each;
	// short, because a consumer just bound holds its deliveries until the
	// write that names it is stored (Join).
	writeGap = 200 * time.Millisecond
)

const (
	livePrefix   = "live."
	servesPrefix = "serves."
)

// Roster is one replica's entry in the roster, and its view of the others.
type Roster struct {
	kv jetstream.KeyValue
	js jetstream.JetStream
	// kvPrefix goes before a KV write's $KV subject: through a JetStream
	// domain its API prefix, which the domain's servers map back to $KV (a
	// $KV subject alone does not cross a leaf node), as nats.go's own KV
	// writes do; "" without one.
	kvPrefix string
	self     string
	log      *slog.Logger
	watch    jetstream.KeyWatcher
	dirty    chan struct{} // what this replica serves changed: write it
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu       sync.Mutex
	live     map[string]time.Time       // other replicas, when last heard of
	serves   map[string]map[string]bool // each replica's consumer keys
	mine     map[string]*joined         // this replica's consumers, by key
	rev      uint64                     // the bucket's last revision counted
	advanced chan struct{}              // closed when rev advances
	watching chan struct{}              // closed when the watch has ended

	unreached atomic.Uint64 // the writes JetStream did not answer (Unreached)
}

// joined is one consumer this replica serves.
type joined struct {
	changed func(n int)
	n       int    // last told
	stored  func() // to call once a write naming it is stored; nil: called
}

// Open creates or updates the roster's bucket (replicas: match the streams')
// for the replica named self, puts its liveness key and reads the others'.
// domain is the JetStream domain js reaches; "" none.
func Open(ctx context.Context, js jetstream.JetStream, domain string, replicas int, self string, log *slog.Logger) (*Roster, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      Bucket,
		Description: "jetgate: the live replicas and the consumers each serves",
		History:     1,
		Replicas:    max(replicas, 1),
		// Liveness keys age out by their own TTL and leave a marker, so
		// that watchers hear of it.
		LimitMarkerTTL: time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("create or update the KV bucket %s: %w", Bucket, err)
	}
	r := &Roster{
		kv: kv, js: js, self: self, log: log,
		dirty:    make(chan struct{}, 1),
		live:     make(map[string]time.Time),
		serves:   make(map[string]map[string]bool),
		mine:     make(map[string]*joined),
		advanced: make(chan struct{}),
		watching: make(chan struct{}),
	}
	if domain != "" {
		r.kvPrefix = "$JS." + domain + ".API."
	}
	if err := r.renew(ctx); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	if r.watch, err = kv.WatchAll(rctx); err != nil {
		cancel()
		return nil, fmt.Errorf("watch the KV bucket %s: %w", Bucket, err)
	}
	r.cancel = cancel
	if err := r.initial(ctx); err != nil {
		r.Close(ctx)
		return nil, err
	}
	r.wg.Go(func() {
		defer close(r.watching)
		r.follow(rctx)
	})
	r.wg.Go(func() { r.keep(rctx) })
	return r, nil
}

// initial reads the bucket as it is, up to the nil entry that ends it.
func (r *Roster) initial(ctx context.Context) error {
	for {
		select {
		case e, ok := <-r.watch.Updates():
			if !ok {
				return fmt.Errorf("the watch of the KV bucket %s ended", Bucket)
			}
			if e == nil {
				return nil
			}
			r.apply(e, time.Now())
			r.counted(e.Revision())
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Join counts this replica among those serving a stream's consumer until
// Leave or Close, and calls changed with the number of replicas serving it
// (itself included): once before it returns, then whenever the number
// changes. It calls stored once the bucket holds this replica as serving
// the consumer, from when its peers count it (after CatchUp, at the
// latest). changed and stored are called with the roster's lock held: they
// must not block.
func (r *Roster) Join(stream, consumer string, changed func(n int), stored func()) {
	key := natsname.Key(stream, consumer)
	j := &joined{changed: changed, stored: stored}
	r.mu.Lock()
	r.mine[key] = j
	j.n = r.countLocked(key)
	changed(j.n)
	r.mu.Unlock()
	r.markDirty()
}

// Leave stops counting this replica among those serving the consumer.
func (r *Roster) Leave(stream, consumer string) {
	r.mu.Lock()
	delete(r.mine, natsname.Key(stream, consumer))
	r.mu.Unlock()
	r.markDirty()
}

func (r *Roster) markDirty() {
	select {
	case r.dirty <- struct{}{}:
	default:
	}
}

// follow tracks the others by the watch, until the roster is closed or the
// watch ends: nothing else waits on it, so that CatchUp does not wait on a
// write.
func (r *Roster) follow(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-r.watch.Updates():
			if !ok {
				return
			}
			if e != nil {
				if r.apply(e, time.Now()) {
					r.recount()
				}
				r.counted(e.Revision())
			}
		}
	}
}

// keep renews the liveness key, forgets the replicas not heard of, and
// writes what this replica serves when it changes (after a failed write,
// again a renewal later), until the roster is closed.
func (r *Roster) keep(ctx context.Context) {
	renew := time.NewTicker(RenewEvery)
	defer renew.Stop()
	var lastWrite time.Time
	gap := writeGap
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.dirty:
			if wait := gap - time.Since(lastWrite); wait > 0 {
				if !sleep(ctx, wait) {
					return
				}
			}
			lastWrite = time.Now()
			if r.writeServes(ctx) {
				gap = writeGap
			} else {
				gap = RenewEvery
			}
		case now := <-renew.C:
			if err := r.renew(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn("could not renew this replica on the roster", "err", err)
				r.failed(err)
			}
			if r.prune(ctx, now) {
				r.recount()
			}
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

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
	if _, err := r.kv.Put(ctx, servesPrefix+r.self, []byte(strings.Join(keys, "\n"))); err != nil {
		if ctx.Err() == nil {
			r.log.Warn("could not write the consumers this replica serves; its peers count it once it can", "err", err)
			r.markDirty()
			r.failed(err)
		}
		return false
	}
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

// apply takes one entry of the bucket; it reports whether a count may have
// changed.
func (r *Roster) apply(e jetstream.KeyValueEntry, now time.Time) bool {
	gone := e.Operation() != jetstream.KeyValuePut
	r.mu.Lock()
	defer r.mu.Unlock()
	if id, ok := strings.CutPrefix(e.Key(), livePrefix); ok && id != r.self {
		_, was := r.live[id]
		if gone {
			delete(r.live, id)
			return was
		}
		r.live[id] = now
		return !was
	}
	if e.Key() == servesPrefix+r.self && gone {
		r.markDirty() // a peer took it for a replica gone (prune): here still
		return false
	}
	if id, ok := strings.CutPrefix(e.Key(), servesPrefix); ok && id != r.self {
		if gone {
			delete(r.serves, id)
			return true
		}
		set := make(map[string]bool)
		for k := range strings.SplitSeq(string(e.Value()), "\n") {
			if k != "" {
				set[k] = true
			}
		}
		r.serves[id] = set
		return true
	}
	return false
}

// prune forgets replicas not heard of for longer than a key lives, should
// the marker of a key that aged out have gone missing, and removes the list
// of every replica whose liveness key is gone (a replica killed without a
// word left its list for good; one still running writes it again). It
// reports whether it forgot any.
func (r *Roster) prune(ctx context.Context, now time.Time) bool {
	forgot := false
	var dead []string
	r.mu.Lock()
	for id, at := range r.live {
		if now.Sub(at) > TTL+RenewEvery {
			delete(r.live, id)
			forgot = true
		}
	}
	for id := range r.serves {
		if _, ok := r.live[id]; !ok {
			delete(r.serves, id)
			dead = append(dead, id)
		}
	}
	r.mu.Unlock()
	for _, id := range dead {
		_ = r.kv.Delete(ctx, servesPrefix+id) // any replica may; the first one does
	}
	return forgot
}

// recount tells each consumer whose count changed.
func (r *Roster) recount() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, j := range r.mine {
		if n := r.countLocked(key); n != j.n {
			j.n = n
			j.changed(n)
		}
	}
}

// countLocked is how many live replicas serve key, this one included.
func (r *Roster) countLocked(key string) int {
	n := 1
	for id := range r.live {
		if r.serves[id][key] {
			n++
		}
	}
	return n
}

// Close takes this replica off the roster.
func (r *Roster) Close(ctx context.Context) {
	if r.cancel != nil {
		r.cancel()
	}
	r.wg.Wait()
	// The watch stops as its context ends (nats.go unsubscribes and deletes
	// its consumer in the background): Stop here would wait on that delete,
	// up to nats.go's own 5s while NATS does not answer, past ctx.
	for _, k := range [...]string{livePrefix + r.self, servesPrefix + r.self} {
		if err := r.kv.Delete(ctx, k); err != nil {
			r.log.Warn("could not leave the roster; the other replicas forget this one once its liveness key ages out", "key", k, "err", err)
		}
	}
}
