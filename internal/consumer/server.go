package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/pull"
)

// priorityOf checks a caller's priority fields against the consumer's
// groups and policy, and names the group when the consumer has just one.
func (c *Consumer) priorityOf(p pull.Priority) (pull.Priority, error) {
	v := c.server.load()
	groups := v.groups
	switch {
	case len(groups) == 0 && p != (pull.Priority{}):
		return p, fmt.Errorf("%w: consumer %q has no priority groups: leave group, min_pending, min_ack_pending, priority and pin_id unset",
			errs.ErrInvalidArgument, c.Name)
	case len(groups) == 0:
		return p, nil
	case p.Group == "" && len(groups) == 1:
		p.Group = groups[0]
	case p.Group == "":
		return p, fmt.Errorf("%w: consumer %q has the priority groups %s: name one in group",
			errs.ErrPriorityGroupRequired, c.Name, strings.Join(groups, ", "))
	case !slices.Contains(groups, p.Group):
		return p, fmt.Errorf("%w: group %q is not one of consumer %q's priority groups (%s)",
			errs.ErrInvalidArgument, p.Group, c.Name, strings.Join(groups, ", "))
	}
	switch {
	case (p.MinPending != 0 || p.MinAckPending != 0) && v.policy != jetstream.PriorityPolicyOverflow:
		return p, fmt.Errorf("%w: min_pending and min_ack_pending are for a consumer of the overflow policy", errs.ErrInvalidArgument)
	case p.PinID != "" && v.policy != jetstream.PriorityPolicyPinned:
		return p, fmt.Errorf("%w: pin_id is for a consumer of the pinned_client policy", errs.ErrInvalidArgument)
	case p.Priority != 0 && v.policy != jetstream.PriorityPolicyPrioritized:
		return p, fmt.Errorf("%w: priority is for a consumer of the prioritized policy", errs.ErrInvalidArgument)
	}
	return p, nil
}

// PinOf is the pin the last of ds carries, if any.
func PinOf(ds []*Delivery) string {
	for _, d := range slices.Backward(ds) {
		if pin := d.Header.Get(pull.PinHeader); pin != "" {
			return pin
		}
	}
	return ""
}

// Pause stops the server delivering the consumer's messages until until,
// for every client of the consumer; it returns the pause the server took.
func (c *Consumer) Pause(ctx context.Context, until time.Time) (paused bool, pauseUntil time.Time, err error) {
	r, err := c.jsStream.PauseConsumer(ctx, c.Name, until)
	if err != nil {
		return false, time.Time{}, c.server.manageError("pause", err)
	}
	c.server.forget()
	return r.Paused, r.PauseUntil, nil
}

// Resume lets a paused consumer deliver again at once.
func (c *Consumer) Resume(ctx context.Context) (paused bool, err error) {
	r, err := c.jsStream.ResumeConsumer(ctx, c.Name)
	if err != nil {
		return false, c.server.manageError("resume", err)
	}
	c.server.forget()
	return r.Paused, nil
}

// Unpin releases the pinned client of group ("" for the consumer's only
// group): the group's next pull is pinned in its place.
func (c *Consumer) Unpin(ctx context.Context, group string) error {
	p, err := c.priorityOf(pull.Priority{Group: group})
	if err != nil {
		return err
	}
	if v := c.server.load(); v.policy != jetstream.PriorityPolicyPinned {
		return fmt.Errorf("%w: consumer %q is not of the pinned_client policy: it has no pin to release", errs.ErrInvalidArgument, c.Name)
	}
	if err := c.jsStream.UnpinConsumer(ctx, c.Name, p.Group); err != nil {
		return c.server.manageError("unpin", err)
	}
	return nil
}

// Info is the consumer's configuration and state, from the server.
func (c *Consumer) Info(ctx context.Context) (*jetstream.ConsumerInfo, error) {
	ci, err := c.server.ask(ctx, c.server.timeout)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return nil, c.server.deleted()
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, fmt.Errorf("%w: consumer info: %v", errs.ErrUnavailable, err)
	}
	return ci, nil
}

// SetPaused records what the server's pause advisory said of the consumer.
func (c *Consumer) SetPaused(paused bool) { c.server.setPaused(paused) }

// emptyReason says why nothing came: the consumer is paused (by anyone), or
// at max_ack_pending, or another client holds the pin, or the caller's
// overflow thresholds are not reached, as the server last said, or there
// was nothing.
func (c *Consumer) emptyReason(ctx context.Context, pri pull.Priority) EmptyReason {
	v := c.server.recent(ctx)
	switch {
	case v.paused:
		return EmptyPaused
	case c.atMaxAckPending(ctx):
		return EmptyMaxAckPending
	case v.policy == jetstream.PriorityPolicyPinned && pri.PinID == "" && v.pinned[pri.Group]:
		return EmptyPinned
	case v.policy == jetstream.PriorityPolicyOverflow && v.pending > 0 && belowThresholds(pri, v):
		return EmptyBelowMinPending
	}
	return EmptyNoMessages
}

// atMaxAckPending reports whether the consumer is at max_ack_pending: by the
// replica's own count of leases, or else by the server's (asked at most
// once a second).
func (c *Consumer) atMaxAckPending(ctx context.Context) bool {
	return c.leases.Live() >= c.server.load().limits.maxAckPending || c.server.recent(ctx).full
}

// OldestUnackedAge is how long the oldest message the consumer has not
// acknowledged (delivered or not) has been in the stream, given the
// consumer's info: the first message of its filter past the ack floor.
func (c *Consumer) OldestUnackedAge(ctx context.Context, ci *jetstream.ConsumerInfo) (time.Duration, error) {
	if ci.NumPending == 0 && ci.NumAckPending == 0 {
		return 0, nil
	}
	filters := ci.Config.FilterSubjects
	if f := ci.Config.FilterSubject; f != "" {
		filters = append(filters, f)
	}
	if len(filters) == 0 {
		filters = []string{">"}
	}
	var oldest time.Time
	for _, f := range filters {
		m, err := c.jsStream.GetMsg(ctx, ci.AckFloor.Stream+1, jetstream.WithGetMsgSubject(f))
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			continue
		case err != nil:
			return 0, fmt.Errorf("%w: read the oldest unacknowledged message: %v", errs.ErrUnavailable, err)
		}
		if oldest.IsZero() || m.Time.Before(oldest) {
			oldest = m.Time
		}
	}
	if oldest.IsZero() {
		return 0, nil
	}
	return max(time.Since(oldest), 0), nil
}
