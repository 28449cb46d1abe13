package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/lease"
)

// A consumer's policy (its redelivery timing and its limits) is the
// server's, and may change at any time: an operator edits it with the NATS
// CLI, Terraform or NACK, or a restart of jetgate updates it. The owner's
// view (view.go) holds it as the last info said; every info replaces it,
// and a change is told to the consumer (onServer.changed, which
// Consumer.policyChanged follows: leases re-dated where the server will now
// redeliver sooner, the waiting places resized). A change is noticed
// without polling, two ways: an update request for the consumer passes on a
// subject every replica sees (Update), or a delivery comes back while
// the lease it replaces still had time left (Add's AddedEarly, seen by
// admit), which only a shorter timing on the server explains.

// followTries bounds the infos asked after an update request passed: the
// server answers infos on a queue of their own, so the first may come
// before the update is applied.
const followTries = 6

// followFirst is the wait before the second of those infos; each wait
// doubles, 1.3s in all.
const followFirst = 40 * time.Millisecond

// Update takes a create or update request for the consumer as it passes on
// NATS. The server redelivers by the new timing, and refuses a pull over the
// new limits of a pull request, the moment it applies it, before any info
// can say so: the leases the request cuts short are re-dated at once, by
// the timing it asks, and pulls are bounded by the limits it asks where
// they are tighter (a refused request leaves both tighter than they need
// be). The follow it returns asks infos until one shows the change, then
// dates leases and bounds pulls by what the server holds; nil for a request
// it cannot read.
func (s *onServer) Update(payload []byte) (follow func(context.Context)) {
	var req struct {
		Config jetstream.ConsumerConfig `json:"config"`
	}
	if json.Unmarshal(payload, &req) != nil {
		return nil
	}
	asked, bounds := requestedTiming(req.Config), requestedLimits(req.Config)
	s.foreseenLimits.Store(&bounds)
	s.foresee(&asked, false)
	return func(ctx context.Context) {
		defer s.foreseenLimits.CompareAndSwap(&bounds, nil) // unless a later request's stands
		defer s.foresee(&asked, true)
		wait := followFirst
		for range followTries {
			ci, err := s.ask(ctx, s.timeout)
			switch {
			case errors.Is(err, jetstream.ErrConsumerNotFound), ctx.Err() != nil:
				return
			case err == nil && shows(ci.Config, req.Config):
				return
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			wait *= 2
		}
	}
}

// FollowUpdate follows a create or update request for the consumer that
// passed (payload is the request's, as the server receives it): Update, then
// its follow, which asks the consumer's info until it shows the timing
// asked for, or followTries were asked (a request the server refused
// changes nothing, and the infos say so). It returns once done or ctx ends.
func (s *onServer) FollowUpdate(ctx context.Context, payload []byte) {
	if follow := s.Update(payload); follow != nil {
		follow(ctx)
	}
}

// foresee dates the leases by p where it is shorter than what they were
// dated by, and new leases by p where it is shorter than the view's
// (timing), until the follow of the request that asked p ends (ended): the
// view's timing is put back then, unless a later request's stands.
func (s *onServer) foresee(p *lease.Policy, ended bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := *p
	if ended {
		if !s.foreseen.CompareAndSwap(p, nil) {
			return
		}
		t = s.last.Load().timing
	} else {
		s.foreseen.Store(p)
	}
	s.retime(t)
}

// requestedTiming is the timing a create or update asks: with a backoff the
// server sets ack_wait to its first step; an ack_wait left out is the
// server's default, 30s.
func requestedTiming(cfg jetstream.ConsumerConfig) lease.Policy {
	p := lease.Policy{AckWait: cfg.AckWait, BackOff: cfg.BackOff}
	switch {
	case len(cfg.BackOff) > 0:
		p.AckWait = cfg.BackOff[0]
	case p.AckWait == 0:
		p.AckWait = serverAckWait
	}
	return p
}

// serverAckWait is the server's ack_wait for a consumer that names none.
const serverAckWait = 30 * time.Second

// requestedLimits are the limits on a pull request that a create or update
// asks: max_request_batch, max_request_expires and max_request_max_bytes
// (0: none; the server takes a negative one as none).
func requestedLimits(cfg jetstream.ConsumerConfig) limits {
	return limits{
		maxBatch:   max(cfg.MaxRequestBatch, 0),
		maxExpires: max(cfg.MaxRequestExpires, 0),
		maxBytes:   int64(max(cfg.MaxRequestMaxBytes, 0)),
	}
}

// requestLimits are the consumer's limits as the view has them, with those on
// a pull request tightened by what an update request that passed asks,
// until its follow ends (Update): the server refuses a pull over them
// (409 "Exceeded MaxRequestBatch") from the moment it applies the update.
// A function of the owner's, not its method.
func requestLimits(s *onServer) limits {
	l := s.view().limits
	if f := s.foreseenLimits.Load(); f != nil {
		l.maxBatch = tighter(l.maxBatch, f.maxBatch)
		l.maxExpires = tighter(l.maxExpires, f.maxExpires)
		l.maxBytes = tighter(l.maxBytes, f.maxBytes)
	}
	return l
}

// tighter is the tighter of two limits, where 0 is none.
func tighter[T int | int64 | time.Duration](a, b T) T {
	if a == 0 || b != 0 && b < a {
		return b
	}
	return a
}

// shows reports whether the server's config has the timing, the priority
// groups and the limits on a pull request asked. An update carries the
// whole configuration, so a backoff it leaves out is removed, not left as
// it was (the server's first info may predate the update, still with the
// old backoff); with a backoff the server sets ack_wait to its first step,
// so ack_wait is then not compared; an ack_wait, max_ack_pending or
// max_request_batch left out takes the server's default.
func shows(cfg, asked jetstream.ConsumerConfig) bool {
	got, want := requestedLimits(cfg), requestedLimits(asked)
	return slices.Equal(cfg.BackOff, asked.BackOff) &&
		slices.Equal(cfg.PriorityGroups, asked.PriorityGroups) && cfg.PriorityPolicy == asked.PriorityPolicy &&
		(asked.AckWait == 0 || len(asked.BackOff) > 0 || cfg.AckWait == asked.AckWait) &&
		(asked.MaxAckPending == 0 || cfg.MaxAckPending == asked.MaxAckPending) &&
		(want.maxBatch == 0 || got.maxBatch == want.maxBatch) &&
		got.maxExpires == want.maxExpires && got.maxBytes == want.maxBytes
}

// redeliveredEarly asks the consumer's info, once and at once, after a
// delivery came back before the lease it replaced ended: the server's
// timing is shorter than the leases say. One question at a time.
func (s *onServer) redeliveredEarly() {
	if !s.asking.CompareAndSwap(false, true) {
		return
	}
	s.log.Info("a message came back before its lease ended: asking the server for the consumer's timing")
	if !s.words.Go(func() {
		defer s.asking.Store(false)
		_, _ = s.ask(context.Background(), s.timeout)
	}) {
		s.asking.Store(false)
	}
}
