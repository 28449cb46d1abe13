package core

import (
	"context"
	"time"
)

// Pause pauses a consumer until until (see consumer.Consumer.Pause).
func (r *Replica) Pause(ctx context.Context, stream, name string, until time.Time) (paused bool, pauseUntil time.Time, err error) {
	c, done, err := r.consumer(ctx, stream, name)
	if err != nil {
		return false, time.Time{}, err
	}
	defer done()
	return c.Pause(ctx, until)
}

// Resume resumes a paused consumer.
func (r *Replica) Resume(ctx context.Context, stream, name string) (paused bool, err error) {
	c, done, err := r.consumer(ctx, stream, name)
	if err != nil {
		return false, err
	}
	defer done()
	return c.Resume(ctx)
}

// Unpin releases a priority group's pinned client.
func (r *Replica) Unpin(ctx context.Context, stream, name, group string) error {
	c, done, err := r.consumer(ctx, stream, name)
	if err != nil {
		return err
	}
	defer done()
	return c.Unpin(ctx, group)
}
