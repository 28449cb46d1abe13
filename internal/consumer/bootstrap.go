package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The seeds bootstrap sends on create when the configuration does not name
// them: the service's own defaults, sent explicitly rather than left to the
// server's.
const (
	SeedAckWait       = 30 * time.Second
	SeedMaxAckPending = 1024
)

// Config is a durable pull consumer the gateway fronts. A zero field is one
// the configuration does not name: on create the seeds (ack_wait,
// max_ack_pending, deliver policy all) are sent explicitly and every other
// field keeps the server's default; on update only the named fields change,
// and whatever an operator set by other means is left as found.
type Config struct {
	Stream         string
	Name           string
	AckWait        time.Duration
	MaxAckPending  int
	DeliverPolicy  *jetstream.DeliverPolicy
	OptStartSeq    uint64
	OptStartTime   *time.Time
	FilterSubjects []string
	MaxDeliver     int             // -1: unlimited
	BackOff        []time.Duration // the redelivery wait by delivery count
	DeadLetter     *DeadLetter
	// Priority groups (ADR-42) and pause; unset, as the server has them.
	PriorityGroups []string
	PriorityPolicy *jetstream.PriorityPolicy
	PinnedTTL      time.Duration // priority_timeout, pinned_client
	PauseUntil     *time.Time
}

// DeadLetter is where the messages of a consumer that run out of
// deliveries (and, with OnTerm, those terminated) are copied.
type DeadLetter struct {
	Subject string
	OnTerm  bool
}

// overlay sets on cfg the fields c names.
func (c Config) overlay(cfg *jetstream.ConsumerConfig) {
	if c.AckWait > 0 {
		cfg.AckWait = c.AckWait
	}
	if c.MaxAckPending > 0 {
		cfg.MaxAckPending = c.MaxAckPending
	}
	if c.DeliverPolicy != nil {
		cfg.DeliverPolicy = *c.DeliverPolicy
	}
	if c.OptStartSeq > 0 {
		cfg.OptStartSeq = c.OptStartSeq
	}
	if c.OptStartTime != nil {
		cfg.OptStartTime = c.OptStartTime
	}
	if c.FilterSubjects != nil {
		cfg.FilterSubject, cfg.FilterSubjects = "", nil
		switch len(c.FilterSubjects) {
		case 0:
		case 1:
			cfg.FilterSubject = c.FilterSubjects[0]
		default:
			cfg.FilterSubjects = c.FilterSubjects
		}
	}
	if c.MaxDeliver != 0 {
		cfg.MaxDeliver = c.MaxDeliver
	}
	if c.BackOff != nil {
		cfg.BackOff = c.BackOff
	}
	if c.PriorityGroups != nil {
		cfg.PriorityGroups = c.PriorityGroups
	}
	if c.PriorityPolicy != nil {
		cfg.PriorityPolicy = *c.PriorityPolicy
	}
	if c.PinnedTTL > 0 {
		cfg.PinnedTTL = c.PinnedTTL
	}
	if c.PauseUntil != nil {
		cfg.PauseUntil = c.PauseUntil
	}
}

// bootstrap creates the durable consumer c describes, or updates the named
// fields of the one that exists, and returns it with its stream.
func bootstrap(ctx context.Context, js jetstream.JetStream, c Config, log *slog.Logger) (jetstream.Stream, jetstream.Consumer, error) {
	s, err := js.Stream(ctx, c.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil, fmt.Errorf("stream %q does not exist: create it, or configure its subjects so that jetgate creates it", c.Stream)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("look up stream %q: %w", c.Stream, err)
	}
	cons, err := bindConsumer(ctx, s, c, log)
	return s, cons, err
}

// bindConsumer creates the consumer c describes, or updates the fields it
// names, and logs what it changed.
func bindConsumer(ctx context.Context, s jetstream.Stream, c Config, log *slog.Logger) (jetstream.Consumer, error) {
	existing, err := s.Consumer(ctx, c.Name)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		all := jetstream.DeliverAllPolicy
		cfg := jetstream.ConsumerConfig{
			Durable:       c.Name,
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       SeedAckWait,
			MaxAckPending: SeedMaxAckPending,
			DeliverPolicy: all,
		}
		c.overlay(&cfg)
		cons, err := s.CreateConsumer(ctx, cfg)
		if err == nil {
			got := cons.CachedInfo().Config
			log.Info("created the consumer", "stream", c.Stream, "consumer", c.Name, "ack_wait", got.AckWait, "backoff", got.BackOff,
				"max_ack_pending", got.MaxAckPending, "max_deliver", got.MaxDeliver)
		}
		return cons, refused(c, "create", err)
	case err != nil:
		return nil, fmt.Errorf("stream %q consumer %q: look up: %w", c.Stream, c.Name, err)
	}
	found := existing.CachedInfo().Config
	if found.AckPolicy != jetstream.AckExplicitPolicy {
		return nil, fmt.Errorf("stream %q consumer %q: ack_policy is %v; jetgate needs explicit acks (this field cannot be updated)", c.Stream, c.Name, found.AckPolicy)
	}
	want := found
	want.Metadata = maps.Clone(found.Metadata)
	maps.DeleteFunc(want.Metadata, func(k, _ string) bool { return strings.HasPrefix(k, "_nats.") })
	if len(want.Metadata) == 0 {
		want.Metadata = nil
	}
	c.overlay(&want)
	want.PauseUntil = found.PauseUntil // an update keeps it: c.pause sets it
	cons := existing
	if !sameConfig(want, found) {
		if cons, err = s.UpdateConsumer(ctx, want); err != nil {
			return nil, refused(c, "update", err)
		}
		// The server may answer the first update after it started with
		// the consumer as it recovered it, from before the update: the
		// policy is read from an info asked after it.
		ci, err := cons.Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("stream %q consumer %q: info after update: %w", c.Stream, c.Name, err)
		}
		got := ci.Config
		log.Info("updated the consumer to the fields configured", "stream", c.Stream, "consumer", c.Name,
			"ack_wait", got.AckWait, "was_ack_wait", found.AckWait, "backoff", got.BackOff, "was_backoff", found.BackOff,
			"max_ack_pending", got.MaxAckPending, "was_max_ack_pending", found.MaxAckPending, "max_deliver", got.MaxDeliver, "was_max_deliver", found.MaxDeliver)
		c.warnBackoff(log, got)
	}
	return cons, c.pause(ctx, s, found.PauseUntil)
}

// warnBackoff warns where the ack_wait configured does not hold because the
// consumer has a backoff the file does not name (set with other tools, and
// kept as every field the file leaves out): the server waits for a first
// delivery by the backoff's first step, whatever ack_wait says.
func (c Config) warnBackoff(log *slog.Logger, got jetstream.ConsumerConfig) {
	if c.AckWait > 0 && c.BackOff == nil && len(got.BackOff) > 0 && got.AckWait != c.AckWait {
		log.Warn("the consumer's backoff, set elsewhere, overrides the ack_wait configured: the server waits for a first delivery by its first step; name backoff in the configuration, or remove it from the consumer",
			"stream", c.Stream, "consumer", c.Name, "ack_wait_configured", c.AckWait, "ack_wait", got.AckWait, "backoff", got.BackOff)
	}
}

// pause applies the pause_until c names to an existing consumer, through
// the pause request: the server ignores it in an update.
func (c Config) pause(ctx context.Context, s jetstream.Stream, found *time.Time) error {
	if c.PauseUntil == nil || (found != nil && found.Equal(*c.PauseUntil)) {
		return nil
	}
	_, err := s.PauseConsumer(ctx, c.Name, *c.PauseUntil)
	return refused(c, "pause", err)
}

// sameConfig reports whether updating found to want would change nothing
// the configuration names.
func sameConfig(want, found jetstream.ConsumerConfig) bool {
	found.Metadata, want.Metadata = nil, nil
	if slices.Equal(want.FilterSubjects, found.FilterSubjects) {
		want.FilterSubjects = found.FilterSubjects
	}
	return reflect.DeepEqual(want, found)
}

func refused(c Config, what string, err error) error {
	if err == nil {
		return nil
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return &RefusedError{Stream: c.Stream, Name: c.Name, Op: what, Reason: apiErr.Description, Code: apiErr.ErrorCode}
	}
	return fmt.Errorf("stream %q consumer %q: %s: %w", c.Stream, c.Name, what, err)
}

// RefusedError is the server's refusal to create, update or pause a
// configured consumer, with its reason.
type RefusedError struct {
	Stream, Name, Op, Reason string
	// Code is the server's error code: some say JetStream is not ready yet
	// rather than refusing the configuration.
	Code jetstream.ErrorCode
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("stream %q consumer %q: the server refused its configuration (%s): %s", e.Stream, e.Name, e.Op, e.Reason)
}
