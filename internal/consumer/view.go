package consumer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/pull"
)

// serverView is what the consumer last learnt of itself from the server:
// its redelivery timing and limits, its priority groups (an operator may
// change any of them at any time) and, from an info at most a second old,
// whether it is at max_ack_pending or paused. Every info, and the answer to
// jetgate's own create or update, replaces it: nothing of the consumer's
// policy is kept from before.
type serverView struct {
	timing  lease.Policy // ack_wait and backoff: when the server redelivers
	limits  limits
	refusal string // why jetgate cannot serve the consumer as it is now; "": it can
	groups  []string
	policy  jetstream.PriorityPolicy
	pinTTL  time.Duration // priority_timeout: a pin no pull carries for so long lapses
	full    bool          // at max_ack_pending with messages waiting
	paused  bool
	pinned  map[string]bool // groups whose pin a client holds
	pending uint64          // messages not yet delivered
	acks    int             // deliveries awaiting a settle
	// inOrder: the consumer has one replica and no raft log, so the server
	// settles what one connection sends in the order sent, and a batch's
	// last reply confirms it all (settle.Sender.SendInOrder).
	inOrder bool
	// host is the server that holds a consumer with no raft log ("" for a
	// replicated one; standaloneHost for one of a JetStream not clustered,
	// whose infos name no server): its restart is heard only by a replica
	// connected to it, as a reconnect (timing, early).
	host string
	// deleted: the server's advisory said the consumer was deleted since
	// this info; the next info says whether it still is (Consumer.Deleted).
	deleted bool
	at      time.Time
	ticket  uint64 // the order in which the info was asked: a later one replaces it
}

// standaloneHost is the host of a consumer of a JetStream that is not
// clustered: no server name has a space in it.
const standaloneHost = "standalone server"

// limits are the consumer's bounds on what its clients ask of it.
type limits struct {
	maxAckPending int
	maxWaiting    int
	maxBatch      int           // max_request_batch; 0 is none
	maxExpires    time.Duration // max_request_expires; 0 is none
	maxBytes      int64         // max_request_max_bytes; 0 is none
}

func viewOf(ci *jetstream.ConsumerInfo) *serverView {
	cfg := ci.Config
	inOrder := cfg.Replicas <= 1 && (ci.Cluster == nil || len(ci.Cluster.Replicas) == 0)
	var host string
	switch {
	case !inOrder:
	case ci.Cluster == nil: // a standalone server's: it names none
		host = standaloneHost
	default:
		host = ci.Cluster.Leader
	}
	return &serverView{
		timing: lease.Policy{AckWait: cfg.AckWait, BackOff: cfg.BackOff},
		limits: limits{
			maxAckPending: cfg.MaxAckPending,
			maxWaiting:    cfg.MaxWaiting,
			maxBatch:      cfg.MaxRequestBatch,
			maxExpires:    cfg.MaxRequestExpires,
			maxBytes:      int64(cfg.MaxRequestMaxBytes),
		},
		refusal: refusalOf(cfg),
		groups:  cfg.PriorityGroups,
		policy:  cfg.PriorityPolicy,
		pinTTL:  cfg.PinnedTTL,
		full:    cfg.MaxAckPending > 0 && ci.NumAckPending >= cfg.MaxAckPending && ci.NumPending > 0,
		paused:  ci.Paused,
		pinned:  pinnedGroups(ci.PriorityGroups),
		pending: ci.NumPending,
		acks:    ci.NumAckPending,
		inOrder: inOrder,
		host:    host,
		at:      time.Now(),
	}
}

// ErrUnservable marks a consumer that exists but that jetgate cannot serve
// as it is (refusalOf); the error is also errs.ErrConsumerNotFound.
var ErrUnservable = errors.New("cannot be served")

func unservable(stream, name, why string) error {
	return fmt.Errorf("%w: consumer %q of stream %q %w: %s", errs.ErrConsumerNotFound, name, stream, ErrUnservable, why)
}

// refusalOf says why jetgate cannot serve a consumer configured so: only a
// pull consumer with explicit acks and an ack wait can be leased.
func refusalOf(cfg jetstream.ConsumerConfig) string {
	switch {
	case cfg.DeliverSubject != "":
		return "it is a push consumer (it has a deliver subject); jetgate serves pull consumers"
	case cfg.AckPolicy != jetstream.AckExplicitPolicy:
		return fmt.Sprintf("its ack policy is %v; jetgate needs explicit acks", cfg.AckPolicy)
	case cfg.AckWait <= 0:
		return "it has no ack wait; jetgate dates its leases by it"
	case cfg.MaxRequestExpires > 0 && cfg.MaxRequestExpires < pull.ImmediateExpiry:
		return fmt.Sprintf("its max_request_expires is %v; the server would refuse every pull of jetgate's, which waits %v at the least", cfg.MaxRequestExpires, pull.ImmediateExpiry)
	case cfg.Durable == "":
		// An application's own ephemeral consumer: served, its messages
		// would go to whoever named it, and jetgate's pulls would keep it
		// alive past its inactive_threshold (a reviewer's finding).
		return "it is ephemeral (no durable name); jetgate serves durable consumers"
	}
	return ""
}

// changedFrom reports whether v times deliveries, bounds clients or can be
// served otherwise than old.
func (v *serverView) changedFrom(old *serverView) bool {
	return !v.timing.Equal(old.timing) || v.limits != old.limits || v.refusal != old.refusal
}

// pinGiven notes that the server gave a caller the pin of group: it is
// pinned, whatever the last info (maybe asked just before) said, so that a
// caller without the pin is told PINNED (emptyReason) rather than
// NO_MESSAGES until the next info.
func pinGiven(s *onServer, group string) {
	if s.view().pinned[group] {
		return
	}
	s.update(func(v *serverView) {
		m := maps.Clone(v.pinned)
		if m == nil {
			m = make(map[string]bool, 1)
		}
		m[group] = true
		v.pinned = m
	})
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

// checkPriority checks a caller's priority fields (Fetch, Consume) against
// the consumer's groups and policy as the view has them and, where it
// refuses them, as an info asked now has them: the view may be from before
// an operator's edit the caller already knows of (its update answered, and
// its follow under way or its request unseen here). A refusal costs the
// caller one info, as a pull would have cost; an info that fails leaves the
// view's answer. A function of the owner's, not its method.
func checkPriority(ctx context.Context, s *onServer, p pull.Priority) (pull.Priority, error) {
	pri, err := s.view().priority(s.name, p)
	if err == nil {
		return pri, nil
	}
	if _, aerr := s.ask(ctx, time.Second); aerr != nil {
		return pri, err
	}
	return s.view().priority(s.name, p)
}

// priority checks a caller's priority fields against the consumer's groups
// and policy, as v has them, and names the group when the consumer (named
// name) has just one.
func (v *serverView) priority(name string, p pull.Priority) (pull.Priority, error) {
	groups := v.groups
	switch {
	case len(groups) == 0 && p != (pull.Priority{}):
		return p, fmt.Errorf("%w: consumer %q has no priority groups: leave group, min_pending, min_ack_pending, priority and pin_id unset",
			errs.ErrInvalidArgument, name)
	case len(groups) == 0:
		return p, nil
	case p.Group == "" && len(groups) == 1:
		p.Group = groups[0]
	case p.Group == "":
		return p, fmt.Errorf("%w: consumer %q has the priority groups %s: name one in group",
			errs.ErrPriorityGroupRequired, name, strings.Join(groups, ", "))
	case !slices.Contains(groups, p.Group):
		return p, fmt.Errorf("%w: group %q is not one of consumer %q's priority groups (%s)",
			errs.ErrInvalidArgument, p.Group, name, strings.Join(groups, ", "))
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

// consumerBound reports whether a pull of maxBytes was bounded by the
// consumer's max_request_max_bytes, not by its caller's max_bytes (which it
// may raise) nor the gateway's bound: a message larger than that reaches no
// caller until an operator raises it.
func consumerBound(s *onServer, maxBytes int64) bool {
	most := requestLimits(s).maxBytes
	return most > 0 && maxBytes >= most
}
