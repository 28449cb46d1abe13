package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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
	ticket  uint64 // the order in which the info was asked: a later one replaces it
}

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
		full:    cfg.MaxAckPending > 0 && ci.NumAckPending >= cfg.MaxAckPending && ci.NumPending > 0,
		paused:  ci.Paused,
		pinned:  pinnedGroups(ci.PriorityGroups),
		pending: ci.NumPending,
		acks:    ci.NumAckPending,
		inOrder: cfg.Replicas <= 1 && (ci.Cluster == nil || len(ci.Cluster.Replicas) == 0),
		at:      time.Now(),
	}
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
	}
	return ""
}

// changedFrom reports whether v times deliveries, bounds clients or can be
// served otherwise than old.
func (v *serverView) changedFrom(old *serverView) bool {
	return !v.timing.Equal(old.timing) || v.limits != old.limits || v.refusal != old.refusal
}

// serverWatch asks the server for the consumer's info and keeps what the
// last answer said (serverView), shared by every reader. Every change of
// the view goes through set, in the order the infos were asked, and a
// change of the consumer's policy is told to changed.
type serverWatch struct {
	js           jetstream.Consumer
	stream, name string
	timeout      time.Duration // bounds each request
	view         atomic.Pointer[serverView]
	mu           sync.Mutex    // orders the writers of view
	tickets      atomic.Uint64 // numbers the infos asked
	// observe is called before each info is asked, and what it returns with
	// the answer: the reset watch reads the delivered count.
	observe func() func(*jetstream.ConsumerInfo)
	// changed is told of each new view whose policy differs from the one
	// before (changedFrom), under the watch's lock, in the order stored.
	changed func(old, now *serverView)
}

func (w *serverWatch) load() *serverView { return w.view.Load() }

// set stores what the answer to the info asked with ticket said, unless a
// later one has been stored already.
func (w *serverWatch) set(ci *jetstream.ConsumerInfo, ticket uint64) {
	v := viewOf(ci)
	v.ticket = ticket
	w.mu.Lock()
	defer w.mu.Unlock()
	old := w.view.Load()
	if old != nil && old.ticket > ticket {
		return
	}
	w.view.Store(v)
	if old != nil && v.changedFrom(old) && w.changed != nil {
		w.changed(old, v)
	}
}

// update changes the view in place of the writers that set it.
func (w *serverWatch) update(f func(v *serverView)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v := *w.view.Load()
	f(&v)
	w.view.Store(&v)
}

// ask asks the server for the consumer's info, bounded by limit (and the
// request timeout) even when ctx has no deadline.
func (w *serverWatch) ask(ctx context.Context, limit time.Duration) (*jetstream.ConsumerInfo, error) {
	ictx, cancel := context.WithTimeout(ctx, min(w.timeout, limit))
	defer cancel()
	answered := w.observe()
	ticket := w.tickets.Add(1)
	ci, err := w.js.Info(ictx)
	if err == nil {
		w.set(ci, ticket)
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
		w.update(func(v *serverView) { v.full, v.paused, v.at = false, false, time.Now() })
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
	w.update(func(v *serverView) { v.at = time.Time{} })
}

// setPaused records what the server's pause advisory said.
func (w *serverWatch) setPaused(paused bool) {
	w.update(func(v *serverView) { v.paused = paused })
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
