package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
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

// serverWatch asks the server for the consumer's info and keeps what the
// last answer said (serverView), shared by every reader.
type serverWatch struct {
	js            jetstream.Consumer
	stream, name  string
	timeout       time.Duration // bounds each request
	maxAckPending int
	view          atomic.Pointer[serverView]
	// observe is called before each info is asked, and what it returns with
	// the answer: the reset watch reads the delivered count.
	observe func() func(*jetstream.ConsumerInfo)
}

func (w *serverWatch) load() *serverView { return w.view.Load() }

// ask asks the server for the consumer's info, bounded by limit (and the
// request timeout) even when ctx has no deadline.
func (w *serverWatch) ask(ctx context.Context, limit time.Duration) (*jetstream.ConsumerInfo, error) {
	ictx, cancel := context.WithTimeout(ctx, min(w.timeout, limit))
	defer cancel()
	answered := w.observe()
	ci, err := w.js.Info(ictx)
	if err == nil {
		w.view.Store(viewOf(ci, w.maxAckPending))
		answered(ci)
	}
	return ci, err
}

// recent is the server's word on whether the consumer is at
// max_ack_pending and whether it is paused, asked at most once a second:
// clients polling with expires 0s must not turn into a stream of info
// requests.
func (w *serverWatch) recent(ctx context.Context) *serverView {
	if v := w.view.Load(); time.Since(v.at) < time.Second {
		return v
	}
	if _, err := w.ask(context.WithoutCancel(ctx), time.Second); err != nil {
		// Unknown: neither full nor paused, and not asked again for a second.
		v := *w.view.Load()
		v.full, v.paused, v.at = false, false, time.Now()
		w.view.Store(&v)
	}
	return w.view.Load()
}

// answers reports whether the server answers for the consumer now.
func (w *serverWatch) answers(ctx context.Context) bool {
	_, err := w.ask(context.WithoutCancel(ctx), time.Second)
	return err == nil
}

// forget has the next reader that needs it ask the server again.
func (w *serverWatch) forget() {
	v := *w.view.Load()
	v.at = time.Time{}
	w.view.Store(&v)
}

// setPaused records what the server's pause advisory said.
func (w *serverWatch) setPaused(paused bool) {
	v := *w.view.Load()
	v.paused = paused
	w.view.Store(&v)
}

func (w *serverWatch) deleted() error {
	return fmt.Errorf("%w: consumer %q of stream %q was deleted", errs.ErrConsumerNotFound, w.name, w.stream)
}

// noResponders explains why nothing answered for the consumer: it was
// deleted (NOT_FOUND), or its leader is being elected or the server is
// unreachable (UNAVAILABLE, worth a retry).
func (w *serverWatch) noResponders(ctx context.Context) error {
	if _, err := w.ask(context.WithoutCancel(ctx), time.Second); errors.Is(err, jetstream.ErrConsumerNotFound) {
		return w.deleted()
	}
	return fmt.Errorf("%w: no JetStream responder for the consumer (a leader election, or the server is unreachable)", errs.ErrUnavailable)
}

// manageError maps what the server answered a Pause, Resume or Unpin.
func (w *serverWatch) manageError(what string, err error) error {
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return w.deleted()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.As(err, &apiErr):
		return fmt.Errorf("%w: the server refused to %s consumer %q: %s", errs.ErrManageRefused, what, w.name, apiErr.Description)
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
