package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// A consumer's policy (its redelivery timing and its limits) is the
// server's, and may change at any time: an operator edits it with the NATS
// CLI, Terraform or NACK, or a restart of jetgate updates it. The watch's
// view (view.go) holds it as the last info said; every info replaces it,
// and a change is followed here (policyChanged): leases re-dated where the
// server will now redeliver sooner, the waiting places resized. A change is
// noticed without polling, two ways: an update request for the consumer
// passes on a subject every replica sees (FollowUpdate), or a delivery
// comes back while the lease it replaces still had time left (Add's
// AddedEarly), which only a shorter timing on the server explains.

// followTries bounds the infos asked after an update request passed: the
// server answers infos on a queue of their own, so the first may come
// before the update is applied.
const followTries = 6

// followFirst is the wait before the second of those infos; each wait
// doubles, 1.3s in all.
const followFirst = 40 * time.Millisecond

// timing is the consumer's redelivery timing, as the server last said.
func (c *Consumer) timing() lease.Policy { return c.server.load().timing }

// placesOf is how many waiting pulls a consumer of max_waiting may have
// open: one fewer, since past max_waiting the server drops a pull that asks
// for heartbeats without a word.
func placesOf(maxWaiting int) int { return max(maxWaiting, 2) - 1 }

// policyChanged follows a change of the consumer's policy on the server,
// under the watch's lock (views are followed in the order they are stored):
// it takes the lease table's and the waiting line's locks, and nothing that
// holds those asks the server.
func (c *Consumer) policyChanged(old, now *serverView) {
	c.counts.PolicyChanges.Add(1)
	moved := c.leases.SetTiming(now.timing)
	if now.limits.maxWaiting != old.limits.maxWaiting {
		c.waiting.resize(placesOf(now.limits.maxWaiting), c.Replicas())
	}
	c.log.Info("the consumer's policy changed on the server",
		"ack_wait", now.timing.AckWait, "backoff", now.timing.BackOff, "was_ack_wait", old.timing.AckWait,
		"max_ack_pending", now.limits.maxAckPending, "max_waiting", now.limits.maxWaiting, "leases_redated", moved)
	if now.refusal != "" && old.refusal == "" {
		c.leases.Void()
		c.log.Warn("the consumer can no longer be served: its leases are void", "reason", now.refusal)
	}
	c.wake()
}

// ErrUnservable marks a consumer that exists but that jetgate cannot serve
// as it is (refusalOf); the error is also errs.ErrConsumerNotFound.
var ErrUnservable = errors.New("cannot be served")

func unservable(stream, name, why string) error {
	return fmt.Errorf("%w: consumer %q of stream %q %w: %s", errs.ErrConsumerNotFound, name, stream, ErrUnservable, why)
}

// servable is nil when jetgate can serve the consumer as the server last
// described it, and otherwise CONSUMER_NOT_FOUND saying why.
func (c *Consumer) servable() error {
	if r := c.server.load().refusal; r != "" {
		return unservable(c.Stream, c.Name, r)
	}
	return nil
}

// FollowUpdate follows a create or update request for the consumer that
// passed (payload is the request's, as the server receives it): it asks
// the consumer's info until it shows the timing asked for, or followTries
// were asked (a request the server refused changes nothing, and the infos
// say so). It returns once done or ctx ends.
func (c *Consumer) FollowUpdate(ctx context.Context, payload []byte) {
	var req struct {
		Config jetstream.ConsumerConfig `json:"config"`
	}
	if json.Unmarshal(payload, &req) != nil {
		return
	}
	wait := followFirst
	for range followTries {
		ci, err := c.server.ask(ctx, c.server.timeout)
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

// shows reports whether the server's config has the timing asked names.
func shows(cfg, asked jetstream.ConsumerConfig) bool {
	return (asked.AckWait == 0 || cfg.AckWait == asked.AckWait) &&
		(asked.BackOff == nil || slices.Equal(cfg.BackOff, asked.BackOff)) &&
		(asked.MaxAckPending == 0 || cfg.MaxAckPending == asked.MaxAckPending)
}

// keepAlive extends the leases kept alive (an Extend with a duration) whose
// deadline is near: the issuer's side of the keep-alive, which ends with
// the issuer (the server then redelivers after one wait).
func (c *Consumer) keepAlive(ctx context.Context, now time.Time) {
	due := c.leases.KeptDue(now, c.extendLead)
	if len(due) == 0 {
		return
	}
	cs := make([]token.Claims, len(due))
	for i := range due {
		cs[i] = c.tokens.claimsOfLease(&due[i])
	}
	ctx, cancel := context.WithTimeout(ctx, c.server.timeout)
	defer cancel()
	for i, o := range c.settle(ctx, lease.OpExtend, cs, settle.Args{KeepAlive: true}, settle.Issued) {
		if o.Err != nil {
			c.log.Warn("could not keep a lease alive: it ends at its deadline", "stream_seq", cs[i].StreamSeq, "err", o.Err)
		}
	}
}

// redeliveredEarly asks the consumer's info, once and at once, after a
// delivery came back before the lease it replaced ended: the server's
// timing is shorter than the leases say. One question at a time.
func (c *Consumer) redeliveredEarly() {
	if !c.asking.CompareAndSwap(false, true) {
		return
	}
	c.log.Info("a message came back before its lease ended: asking the server for the consumer's timing")
	c.words.Add(1)
	go func() {
		defer c.words.Done()
		defer c.asking.Store(false)
		_, _ = c.server.ask(context.Background(), c.server.timeout)
	}()
}
