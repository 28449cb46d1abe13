package replica

import (
	"context"
	"time"

	"github.com/jetgate/jetgate/internal/natsname"
)

// HoldForTest holds consumer stream/name through r for ttl, as a change
// through the API holds it, and never lets go: as a replica that stopped
// while holding it.
func (r *Replica) HoldForTest(ctx context.Context, stream, name string, ttl time.Duration) error {
	kv, err := r.manager.locks.bucket(ctx, r.js)
	if err != nil {
		return err
	}
	_, _, err = take(ctx, kv, natsname.Key(stream, name)+lockSuffix, "update through replica "+r.self.String(), "the test's consumer", ttl)
	return err
}

// LockTTL is how long a replica of request timeout timeout holds a
// consumer for a change unless it lets go first.
func LockTTL(timeout time.Duration) time.Duration { return lockTTL(timeout) }
