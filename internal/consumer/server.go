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

// serverView is what the consumer last learnt of itself from the server:
// its priority groups (an operator may change them at any time) and, from
// an info at most a second old, whether it is at max_ack_pending or paused.
type serverView struct {
	groups  []string
	policy  jetstream.PriorityPolicy
	full    bool // at max_ack_pending with messages waiting
	paused  bool
	pinned  map[string]bool // groups whose pin a client holds
	pending uint64          // messages not yet delivered
	acks    int             // deliveries awaiting a settle
	// inOrder: the consumer has one replica and no raft log, so the server
	// settles what one connection sends in the order sent, and a batch's
	// last reply confirms it all (settle.Sender.SendInOrder).
	inOrder bool
	at      time.Time
}

func viewOf(ci *jetstream.ConsumerInfo, maxAckPending int) *serverView {
	return &serverView{
		groups:  ci.Config.PriorityGroups,
		policy:  ci.Config.PriorityPolicy,
		full:    ci.NumAckPending >= maxAckPending && ci.NumPending > 0,
		paused:  ci.Paused,
		pinned:  pinnedGroups(ci.PriorityGroups),
		pending: ci.NumPending,
		acks:    ci.NumAckPending,
		inOrder: ci.Config.Replicas <= 1 && (ci.Cluster == nil || len(ci.Cluster.Replicas) == 0),
		at:      time.Now(),
	}
}

// priorityOf checks a caller's priority fields against the consumer's
// groups and policy, and names the group when the consumer has just one.
func (c *Consumer) priorityOf(p pull.Priority) (pull.Priority, error) {
	v := c.view.Load()
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
		return false, time.Time{}, c.manageError("pause", err)
	}
	c.forgetState()
	return r.Paused, r.PauseUntil, nil
}

// Resume lets a paused consumer deliver again at once.
func (c *Consumer) Resume(ctx context.Context) (paused bool, err error) {
	r, err := c.jsStream.ResumeConsumer(ctx, c.Name)
	if err != nil {
		return false, c.manageError("resume", err)
	}
	c.forgetState()
	return r.Paused, nil
}

// Unpin releases the pinned client of group ("" for the consumer's only
// group): the group's next pull is pinned in its place.
func (c *Consumer) Unpin(ctx context.Context, group string) error {
	p, err := c.priorityOf(pull.Priority{Group: group})
	if err != nil {
		return err
	}
	if v := c.view.Load(); v.policy != jetstream.PriorityPolicyPinned {
		return fmt.Errorf("%w: consumer %q is not of the pinned_client policy: it has no pin to release", errs.ErrInvalidArgument, c.Name)
	}
	if err := c.jsStream.UnpinConsumer(ctx, c.Name, p.Group); err != nil {
		return c.manageError("unpin", err)
	}
	return nil
}

// forgetState has the next Fetch that needs it ask the server again.
func (c *Consumer) forgetState() {
	v := *c.view.Load()
	v.at = time.Time{}
	c.view.Store(&v)
}

// manageError maps what the server answered a Pause, Resume or Unpin.
func (c *Consumer) manageError(what string, err error) error {
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return c.deleted()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.As(err, &apiErr):
		return fmt.Errorf("%w: the server refused to %s consumer %q: %s", errs.ErrManageRefused, what, c.Name, apiErr.Description)
	}
	return fmt.Errorf("%w: %s: %v", errs.ErrUnavailable, what, err)
}

// pinnedGroups are the groups whose pin a client holds, by the server's info.
func pinnedGroups(gs []jetstream.PriorityGroupState) map[string]bool {
	var m map[string]bool
	for _, g := range gs {
		if g.PinnedClientID != "" {
			if m == nil {
				m = make(map[string]bool)
			}
			m[g.Group] = true
		}
	}
	return m
}

// belowThresholds reports whether an overflow pull with thresholds stays
// unserved: neither min_pending nor min_ack_pending reached.
func belowThresholds(p pull.Priority, v *serverView) bool {
	if p.MinPending <= 0 && p.MinAckPending <= 0 {
		return false
	}
	return !(p.MinPending > 0 && v.pending >= uint64(p.MinPending)) &&
		!(p.MinAckPending > 0 && int64(v.acks) >= p.MinAckPending)
}

// info asks the server for the consumer's info, bounded by limit (and the
// request timeout) even when ctx has no deadline.
func (c *Consumer) info(ctx context.Context, limit time.Duration) (*jetstream.ConsumerInfo, error) {
	ictx, cancel := context.WithTimeout(ctx, min(c.timeout, limit))
	defer cancel()
	before := c.resets.mark()
	ci, err := c.jsConsumer.Info(ictx)
	if err == nil {
		c.view.Store(viewOf(ci, c.maxAckPending))
		if c.resets.informed(before, ci.Delivered) {
			// Told too: this replica's next deliveries are numbered above
			// all it has seen in the new count, and would not show the
			// reset to it, while another replica may hold a lease from
			// before it.
			c.tellReset("its info counts fewer deliveries than this replica received", "delivered", ci.Delivered.Consumer)
		}
	}
	return ci, err
}

// Info is the consumer's configuration and state, from the server.
func (c *Consumer) Info(ctx context.Context) (*jetstream.ConsumerInfo, error) {
	ci, err := c.info(ctx, c.timeout)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return nil, c.deleted()
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, fmt.Errorf("%w: consumer info: %v", errs.ErrUnavailable, err)
	}
	return ci, nil
}

func (c *Consumer) deleted() error {
	return fmt.Errorf("%w: consumer %q of stream %q was deleted", errs.ErrConsumerNotFound, c.Name, c.Stream)
}

// noResponders explains why nothing answered for the consumer: it was
// deleted (NOT_FOUND), or its leader is being elected or the server is
// unreachable (UNAVAILABLE, worth a retry).
func (c *Consumer) noResponders(ctx context.Context) error {
	if _, err := c.info(context.WithoutCancel(ctx), time.Second); errors.Is(err, jetstream.ErrConsumerNotFound) {
		return c.deleted()
	}
	return fmt.Errorf("%w: no JetStream responder for the consumer (a leader election, or the server is unreachable)", errs.ErrUnavailable)
}

// SetPaused records what the server's pause advisory said of the consumer.
func (c *Consumer) SetPaused(paused bool) {
	v := *c.view.Load()
	v.paused = paused
	c.view.Store(&v)
}

// serverAnswers reports whether the server answers for the consumer.
func (c *Consumer) serverAnswers(ctx context.Context) bool {
	if !c.nc.IsConnected() {
		return false
	}
	_, err := c.info(context.WithoutCancel(ctx), time.Second)
	return err == nil
}

// emptyReason says why nothing came: the consumer is paused (by anyone), or
// at max_ack_pending, or another client holds the pin, or the caller's
// overflow thresholds are not reached, as the server last said, or there
// was nothing.
func (c *Consumer) emptyReason(ctx context.Context, pri pull.Priority) EmptyReason {
	v := c.serverState(ctx)
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
	return c.leases.Live() >= c.maxAckPending || c.serverState(ctx).full
}

// serverState is the server's word on whether the consumer is at
// max_ack_pending and whether it is paused, asked at most once a second:
// clients polling with expires 0s must not turn into a stream of info
// requests.
func (c *Consumer) serverState(ctx context.Context) *serverView {
	if v := c.view.Load(); time.Since(v.at) < time.Second {
		return v
	}
	if _, err := c.info(context.WithoutCancel(ctx), time.Second); err != nil {
		// Unknown: neither full nor paused, and not asked again for a second.
		v := *c.view.Load()
		v.full, v.paused, v.at = false, false, time.Now()
		c.view.Store(&v)
	}
	return c.view.Load()
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
