package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/goroutines"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/pull"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// onServer is what jetgate knows of one consumer as the server has it: its
// policy (redelivery timing and limits), pause, priority groups and pins
// (the view, view.go), and its reset epoch (reset.go). It is the only reader
// of the consumer's infos, of the answer to jetgate's own create or update,
// of its pause advisories (SetPaused), of the requests that pass for it
// (FollowUpdate, ResetRequested) and of the peers' words (HearResetWord,
// word.go), and the only judge of whether a delivery is from before a
// reset (admit). The rest of the consumer asks it: the timing of a
// delivery, whether it may be leased, when the last reset was, the limits.
// It tells the consumer three events: a reset (the lease table voids, under
// the reset watch's lock), a change of policy (changed: leases re-dated,
// waiting places resized) and an Unpin that passed (unpinned: the rest of
// the old pin's Fetches nak'ed back).
//
// Its methods, by file: this one, the view and asking the server (info,
// pause, pins); reset.go, the reset rules; policy.go, following a change of
// policy; word.go, the word of a reset to the peers.
type onServer struct {
	stream, name string
	js           jetstream.Consumer
	jsStream     jetstream.Stream
	nc           *nats.Conn
	self         token.IssuerID // this replica, the sender of its words
	timeout      time.Duration  // bounds each request
	log          *slog.Logger

	last    atomic.Pointer[serverView] // what the server last said
	mu      sync.Mutex                 // orders the writers of last
	tickets atomic.Uint64              // numbers the infos asked

	resets  *resetWatch
	held    *holdBack        // new deliveries, while peers are told of a reset
	settles inFlight         // the settles the server has not answered yet (word.go)
	words   goroutines.Group // the goroutines telling peers, or asking after an early redelivery (none once closed)
	onReset func(id string, peers int)
	peers   func(ctx context.Context) []string // names the other replicas serving it (Deps.Peers)
	asking  atomic.Bool                        // redeliveredEarly's question is out
	leaders atomic.Uint64                      // new leaders elected (LeaderElected)
	// connected is the server the replica's connection is on (nil:
	// unknown), as of the bind or the last reconnect (timing).
	connected atomic.Pointer[where]
	api       string // the JetStream API prefix it is reached through
	// reconnects counts the reconnects and spells away told (Reconnected,
	// Away), and informed is that count as of the last info asked after one
	// (current, under asked), with the ledger's record of resets (records).
	reconnects, informed atomic.Uint64
	asked                sync.Mutex
	records              resetRecords

	// changed is told of each new view whose policy differs from the one
	// before (changedFrom), under mu, in the order stored: it takes the
	// lease table's and the waiting line's locks, and nothing that holds
	// those asks the server.
	changed func(old, now *serverView)
	// retime dates the leases by a timing not yet the view's (foresee),
	// under mu, as changed does.
	retime func(lease.Policy)
	// foreseen is that timing while it stands (nil: the view's): a
	// delivery is dated, and promised, by it where it is shorter.
	foreseen atomic.Pointer[lease.Policy]
	// foreseenLimits are the limits on a pull request that an update
	// request that passed asks, until its follow ends (nil: none): a pull
	// is bounded by them where they are tighter (requestLimits).
	foreseenLimits atomic.Pointer[limits]
	// replicas is how many replicas serve the consumer, itself included.
	replicas func() int
	// unpinned is told that an Unpin of group, sent at sent, passed: the
	// pin of before is gone (orphanPool.unpinned).
	unpinned func(group string, sent time.Time)
	// resetRecord records a reset noticed for the replicas that bind the
	// consumer later (settle.Ledger.RecordReset); nil: none (shareReset).
	resetRecord func(ctx context.Context, at time.Time) error
}

// newOnServer takes what the server said of cons when it was bound: its
// policy and groups stand; whether full or paused is asked anew. void
// voids every lease, counted in resets.
func newOnServer(s jetstream.Stream, cons jetstream.Consumer, d Deps, log *slog.Logger, void func(), counts *Counts) *onServer {
	ci := cons.CachedInfo()
	o := &onServer{
		stream: ci.Stream, name: ci.Name,
		js: cons, jsStream: s, nc: d.Conn, self: d.Self, timeout: d.Timeout, log: log,
		held: newHoldBack(), onReset: d.OnReset,
		changed:  func(_, _ *serverView) {},
		retime:   func(lease.Policy) {},
		replicas: func() int { return 1 },
		unpinned: func(string, time.Time) {},
	}
	// What the server had delivered when it was bound: every delivery to a
	// pull sent later is numbered above it, unless the consumer is reset.
	bySeq := ci.Config.DeliverPolicy != jetstream.DeliverLastPerSubjectPolicy
	o.resets = newResetWatch(ci.Delivered.Consumer, ci.Delivered.Stream, bySeq, void)
	o.resets.created = ci.Created
	o.resets.count = &counts.Resets
	o.resets.voided = o.settles.voided
	o.settles.gaveUp = &counts.DrainsGivenUp
	o.peers = func(ctx context.Context) []string {
		if d.Peers == nil {
			return nil
		}
		ids, err := d.Peers(ctx, ci.Stream, ci.Name)
		if err != nil && ctx.Err() == nil {
			log.Warn("could not bring the roster up to date before naming the replicas to tell of a consumer reset; one that just bound may not be waited for", "err", err)
		}
		return ids
	}
	if d.Ledger != nil {
		o.resetRecord = func(ctx context.Context, at time.Time) error {
			return d.Ledger.RecordReset(ctx, ci.Stream, ci.Name, at, resetKept(o.timing()))
		}
	}
	o.api = cmp.Or(d.API, pull.API(""))
	o.connected.Store(connectedTo(d.Conn, o.api))
	o.records.since = ci.TimeStamp
	if d.Ledger != nil {
		o.records.read = func(ctx context.Context) (settle.ResetRecord, error) {
			return d.Ledger.ResetRecordOf(ctx, ci.Stream, ci.Name)
		}
	}
	v := viewOf(ci)
	v.at = time.Time{}
	o.last.Store(v)
	return o
}

// view is what the server last said of the consumer.
func (s *onServer) view() *serverView { return s.last.Load() }

// timing is the consumer's redelivery timing, as the server last said (or
// as an update request that passed asks where that is shorter, until an
// info shows it: foresee); a
// second sooner (Early) while the server that holds a consumer with no raft
// log is not the one the replica is connected to: that server dates what
// awaits an ack to the second when it restarts (lease.RestorePrecision), and
// nothing tells the replica that it did.
func (s *onServer) timing() lease.Policy {
	v := s.last.Load()
	t := v.timing
	if f := s.foreseen.Load(); f != nil {
		t = t.Shorter(*f) // a request the server refuses, or one that lengthens, dates nothing longer
	}
	if early(v.host, s.connected.Load()) {
		t.Early = lease.RestorePrecision
	}
	return t
}

// servable is nil when jetgate can serve the consumer as the server last
// described it, and otherwise CONSUMER_NOT_FOUND saying why.
func (s *onServer) servable() error {
	if r := s.last.Load().refusal; r != "" {
		return unservable(s.stream, s.name, r)
	}
	return nil
}

// set stores what the answer to the info asked with ticket said, unless a
// later one has been stored already.
func (s *onServer) set(ci *jetstream.ConsumerInfo, ticket uint64) {
	v := viewOf(ci)
	v.ticket = ticket
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.last.Load()
	if old != nil && old.ticket > ticket {
		return
	}
	s.last.Store(v)
	if old != nil && v.changedFrom(old) {
		s.changed(old, v)
	}
}

// update changes the view in place of the writers that set it.
func (s *onServer) update(f func(v *serverView)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := *s.last.Load()
	f(&v)
	s.last.Store(&v)
}

// ask asks the server for the consumer's info, bounded by limit (and the
// request timeout) even when ctx has no deadline. Every info goes through
// here: the view takes it, and the reset rules read its delivered count.
func (s *onServer) ask(ctx context.Context, limit time.Duration) (*jetstream.ConsumerInfo, error) {
	ictx, cancel := context.WithTimeout(ctx, min(s.timeout, limit))
	defer cancel()
	before := s.resets.mark()
	ticket := s.tickets.Add(1)
	ci, err := s.js.Info(ictx)
	if err == nil {
		s.set(ci, ticket)
		s.observeInfo(before, ci)
	}
	return ci, err
}

// recent is the server's word on whether the consumer is at
// max_ack_pending and whether it is paused, asked at most once a second:
// clients polling with expires 0s must not turn into a stream of info
// requests.
func (s *onServer) recent(ctx context.Context) *serverView {
	if v := s.last.Load(); time.Since(v.at) < time.Second {
		return v
	}
	if _, err := s.ask(context.WithoutCancel(ctx), time.Second); err != nil {
		// Unknown: neither full nor paused, and not asked again for a second.
		s.update(func(v *serverView) { v.full, v.paused, v.at = false, false, time.Now() })
	}
	return s.last.Load()
}

// SetPaused records what the server's pause advisory said of the consumer,
// numbered as an info asked now: the answer to one asked before it does not
// undo it.
func (s *onServer) SetPaused(paused bool) {
	ticket := s.tickets.Add(1)
	s.update(func(v *serverView) { v.paused, v.ticket = paused, ticket })
}

func (s *onServer) deleted() error {
	return fmt.Errorf("%w: consumer %q of stream %q was deleted", errs.ErrConsumerNotFound, s.name, s.stream)
}

// deletedNow is CONSUMER_NOT_FOUND once the server's advisory has said the
// consumer was deleted and its info agrees (if it was made again, the info
// clears the word); nil while it cannot be asked.
func deletedNow(ctx context.Context, s *onServer) error {
	if !s.view().deleted {
		return nil
	}
	ictx, cancel := context.WithTimeout(ctx, time.Second) // a stream's heartbeats wait meanwhile
	defer cancel()
	if _, err := s.Info(ictx); errors.Is(err, errs.ErrConsumerNotFound) {
		return err
	}
	return nil
}

// noResponders explains why nothing answered for the consumer: it was
// deleted (NOT_FOUND), or its leader is being elected or the server is
// unreachable (UNAVAILABLE, worth a retry).
func (s *onServer) noResponders(ctx context.Context) error {
	away(s) // whatever the cause, what passed meanwhile may have gone unheard
	if _, err := s.ask(context.WithoutCancel(ctx), time.Second); gone(err) {
		return s.deleted()
	}
	return fmt.Errorf("%w: no JetStream responder for the consumer (a leader election, or the server is unreachable)", errs.ErrUnavailable)
}

// Info is the consumer's configuration and state, from the server; one
// jetgate cannot serve (no longer of explicit acks, a push consumer) is
// CONSUMER_NOT_FOUND saying why, to a GetConsumer, Pause or Seek as to a
// Fetch.
func (s *onServer) Info(ctx context.Context) (*jetstream.ConsumerInfo, error) {
	ci, err := s.ask(ctx, s.timeout)
	switch {
	case gone(err):
		return nil, s.deleted()
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, fmt.Errorf("%w: consumer info: %v", errs.ErrUnavailable, err)
	}
	if err := s.servable(); err != nil {
		return nil, err
	}
	return ci, nil
}

// Pause stops the server delivering the consumer's messages until until,
// for every client of the consumer; it returns the pause the server took.
func (s *onServer) Pause(ctx context.Context, until time.Time) (paused bool, pauseUntil time.Time, err error) {
	if _, err := s.Info(ctx); err != nil { // not one jetgate cannot serve
		return false, time.Time{}, err
	}
	r, err := s.jsStream.PauseConsumer(ctx, s.name, until)
	if err != nil {
		return false, time.Time{}, s.manageError("pause", err)
	}
	s.update(func(v *serverView) { v.at = time.Time{} }) // the next reader that needs it asks
	return r.Paused, r.PauseUntil, nil
}

// Resume lets a paused consumer deliver again at once.
func (s *onServer) Resume(ctx context.Context) (paused bool, err error) {
	if _, err := s.Info(ctx); err != nil {
		return false, err
	}
	r, err := s.jsStream.ResumeConsumer(ctx, s.name)
	if err != nil {
		return false, s.manageError("resume", err)
	}
	s.update(func(v *serverView) { v.at = time.Time{} })
	return r.Paused, nil
}

// Unpin releases the pinned client of group ("" for the consumer's only
// group): the group's next pull is pinned in its place.
func (s *onServer) Unpin(ctx context.Context, group string) error {
	if _, err := s.Info(ctx); err != nil {
		return err
	}
	v := s.last.Load()
	p, err := v.priority(s.name, pull.Priority{Group: group})
	if err != nil {
		return err
	}
	if v.policy != jetstream.PriorityPolicyPinned {
		return fmt.Errorf("%w: consumer %q is not of the pinned_client policy: it has no pin to release", errs.ErrInvalidArgument, s.name)
	}
	sent := time.Now()
	if err := s.jsStream.UnpinConsumer(ctx, s.name, p.Group); err != nil {
		return s.manageError("unpin", err)
	}
	s.unpinned(p.Group, sent)
	return nil
}

// manageError maps what the server answered a Pause, Resume or Unpin.
func (s *onServer) manageError(what string, err error) error {
	var apiErr *jetstream.APIError
	switch {
	case gone(err):
		return s.deleted()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.As(err, &apiErr):
		return fmt.Errorf("%w: the server refused to %s consumer %q: %s", errs.ErrManageRefused, what, s.name, apiErr.Description)
	}
	return fmt.Errorf("%w: %s: %v", errs.ErrUnavailable, what, err)
}

// OldestUnackedAge is how long the oldest message the consumer has not
// acknowledged (delivered or not) has been in the stream, given the
// consumer's info: the first message of its filter past the ack floor.
func (s *onServer) OldestUnackedAge(ctx context.Context, ci *jetstream.ConsumerInfo) (time.Duration, error) {
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
		m, err := s.jsStream.GetMsg(ctx, ci.AckFloor.Stream+1, jetstream.WithGetMsgSubject(f))
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

// gone reports whether err says the consumer, or its stream, no longer exists.
func gone(err error) bool {
	return errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound)
}
