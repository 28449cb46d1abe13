package replica

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/natsname"
	"github.com/jetgate/jetgate/internal/settle"
)

// The server's consumer update has no compare-and-set: an update is a read
// of the whole configuration, a change, and a write of it all back, and two
// at once through two replicas would each write over the other's change
// (or, racing a delete and a create again, write the old consumer's
// creator and configuration onto the new one). So every create, update and
// delete of one consumer through the API holds it, one at a time across
// every replica: a key of the ledger's bucket, created only where none is
// (kv.Create), with a TTL of its own so that a holder that stopped lets go
// by itself within lockTTL.

// consumerLocks holds consumers for their changes through the API.
type consumerLocks struct {
	mu sync.Mutex
	kv jetstream.KeyValue // the ledger's bucket, bound on first use
}

// lockTTL is how long a hold lasts unless let go: a read and a write of
// the consumer, each within a request timeout, in whole seconds (the
// server keeps a TTL to the second).
func lockTTL(timeout time.Duration) time.Duration {
	return (2*timeout + time.Second - 1).Truncate(time.Second)
}

// lockWait is how long a change waits for another's hold: long enough to
// outwait one whose holder stopped (its key ages out within its TTL, and
// the server removes it within a second of that).
func lockWait(ttl time.Duration) time.Duration { return ttl + 2*time.Second }

const (
	lockSuffix   = ".lock" // after natsname.Key in the ledger's bucket
	lockReleased = time.Second
	lockPollMin  = 5 * time.Millisecond
	lockPollMax  = 200 * time.Millisecond
)

// hold runs f with consumer stream/name held for op ("create", "update",
// "delete"). f's ctx ends a quarter of the TTL before the hold could lapse
// (the holder's clock starts before the server's, and the quarter covers
// a step of the server's): whatever f is answered has happened under the
// hold. A hold f outlasted is not let go (a write may still land): it
// lapses.
func (l *consumerLocks) hold(ctx context.Context, e *env, op, stream, name string, f func(context.Context) error) error {
	kv, err := l.bucket(ctx, e.js)
	if err != nil {
		return err
	}
	key, ttl := natsname.Key(stream, name)+lockSuffix, lockTTL(e.timeout)
	what := fmt.Sprintf("consumer %q of stream %q", name, stream)
	rev, from, err := take(ctx, kv, key, op+" through replica "+e.self.String(), what, ttl)
	if err != nil {
		return err
	}
	held, cancel := context.WithDeadline(ctx, from.Add(ttl-ttl/4))
	defer cancel()
	err = f(held)
	if held.Err() != nil {
		if err != nil && ctx.Err() == nil {
			err = fmt.Errorf("%w: the %s of %s took longer than its hold of it (%v): %v", errs.ErrUnavailable, op, what, ttl-ttl/4, err)
		}
		return err
	}
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), e.timeout)
	defer rcancel()
	if perr := kv.Purge(rctx, key, jetstream.LastRevision(rev), jetstream.PurgeTTL(lockReleased)); perr != nil {
		e.log.Warn("could not let go of a consumer held for a change through the API; other changes of it wait until the hold lapses",
			"stream", stream, "consumer", name, "op", op, "lapses_within", ttl, "err", perr)
	}
	return err
}

// bucket is the ledger's bucket, bound once.
func (l *consumerLocks) bucket(ctx context.Context, js jetstream.JetStream) (jetstream.KeyValue, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kv == nil {
		kv, err := js.KeyValue(ctx, settle.LedgerBucket)
		if err != nil {
			return nil, fmt.Errorf("%w: the KV bucket %s: %v", errs.ErrUnavailable, settle.LedgerBucket, err)
		}
		l.kv = kv
	}
	return l.kv, nil
}

// take creates key, naming holder, with a TTL of ttl, waiting while another
// holds it, up to lockWait. It returns the key's revision and when its
// create was sent: the hold lapses no sooner than ttl after. what is the
// consumer held, for errors.
func take(ctx context.Context, kv jetstream.KeyValue, key, holder, what string, ttl time.Duration) (uint64, time.Time, error) {
	giveUp := time.Now().Add(lockWait(ttl))
	pause := lockPollMin
	for {
		from := time.Now()
		rev, err := kv.Create(ctx, key, []byte(holder), jetstream.KeyTTL(ttl))
		switch {
		case err == nil:
			return rev, from, nil
		case ctx.Err() != nil:
			return 0, time.Time{}, ctx.Err()
		case !taken(err):
			return 0, time.Time{}, fmt.Errorf("%w: hold %s (key %s of %s): %v", errs.ErrUnavailable, what, key, settle.LedgerBucket, err)
		}
		for {
			e, err := kv.Get(ctx, key)
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				break // let go, or lapsed (a marker reads as none): create it again
			}
			switch {
			case ctx.Err() != nil:
				return 0, time.Time{}, ctx.Err()
			case err != nil:
				return 0, time.Time{}, fmt.Errorf("%w: read the hold of %s (key %s of %s): %v", errs.ErrUnavailable, what, key, settle.LedgerBucket, err)
			case !time.Now().Before(giveUp):
				return 0, time.Time{}, fmt.Errorf("%w: another change of %s (%s) held it for all of the %v a change waits; retry in a few seconds (a hold whose replica stopped lapses within %v)",
					errs.ErrConsumerBusy, what, e.Value(), lockWait(ttl), ttl)
			}
			if err := waitFor(ctx, min(pause/2+rand.N(pause), time.Until(giveUp))); err != nil {
				return 0, time.Time{}, err
			}
			pause = min(2*pause, lockPollMax)
		}
	}
}

// taken reports whether a create failed because the key is there: nats.go
// says ErrKeyExists, but passes the server's wrong-last-sequence error on
// as it is for a create over a delete or purge marker written meanwhile.
func taken(err error) bool {
	var api *jetstream.APIError
	return errors.Is(err, jetstream.ErrKeyExists) ||
		errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// waitFor waits d, or until ctx ends.
func waitFor(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
