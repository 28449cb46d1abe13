package replica

import (
	"context"
	"time"
)

// manager changes consumers on the server for callers: pauses, pins and
// seeks (seek.go) of the consumers it serves, and consumers created,
// updated and deleted through the API (consumers.go).
type manager struct {
	*env
	binder *binder
	locks  consumerLocks // one change at a time of a consumer through the API (consumers_lock.go)
}

// Pause pauses a consumer until until (see consumer.Consumer.Pause).
func (m *manager) Pause(ctx context.Context, stream, name string, until time.Time) (paused bool, pauseUntil time.Time, err error) {
	c, done, err := m.binder.consumer(ctx, stream, name)
	if err != nil {
		return false, time.Time{}, err
	}
	defer done()
	return c.Pause(ctx, until)
}

// Resume resumes a paused consumer.
func (m *manager) Resume(ctx context.Context, stream, name string) (paused bool, err error) {
	c, done, err := m.binder.consumer(ctx, stream, name)
	if err != nil {
		return false, err
	}
	defer done()
	return c.Resume(ctx)
}

// Unpin releases a priority group's pinned client.
func (m *manager) Unpin(ctx context.Context, stream, name, group string) error {
	c, done, err := m.binder.consumer(ctx, stream, name)
	if err != nil {
		return err
	}
	defer done()
	return c.Unpin(ctx, group)
}
