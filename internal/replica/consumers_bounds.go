package replica

import (
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
)

// admitted checks cfg is a consumer jetgate serves, within the admin
// block a's bounds, and fills what the bounds set where the caller left it unset: the
// bound, or the server's limit where that is lower (limitsNow: the server
// refuses a consumer above it, and fills its own defaults within it). was
// is the consumer as the server has it, for an update (nil for a create). A
// value outside a bound is refused, naming it, whether the caller asked for
// it or the consumer has had it since before the bound: never cut to the
// bound unsaid (a read-modify-write sends back the server's -1, unlimited,
// for max_deliver).
func admitted(a *consumer.Admin, cfg, was *jetstream.ConsumerConfig, limits jetstream.StreamConsumerLimits) error {
	if cfg.AckPolicy != jetstream.AckExplicitPolicy {
		return fmt.Errorf("%w: config.ack_policy: jetgate serves consumers with explicit acks only", errs.ErrInvalidArgument)
	}
	update := was != nil
	if !update {
		was = &jetstream.ConsumerConfig{} // a create: no value refused is 0, so none is the consumer's as it stands
	}
	for _, b := range []intBound{
		{"max_deliver", &cfg.MaxDeliver, was.MaxDeliver, a.MaxDeliver, 0, false},
		{"max_ack_pending", &cfg.MaxAckPending, was.MaxAckPending, a.MaxAckPending, limits.MaxAckPending, false},
		// The server refuses to change max_waiting: a consumer made before
		// the bound keeps its own through an update of other fields, rather
		// than be refused every update for good.
		{"max_waiting", &cfg.MaxWaiting, was.MaxWaiting, a.MaxWaiting, 0, update},
	} {
		if err := b.fill(); err != nil {
			return err
		}
	}
	if cfg.AckWait == 0 {
		cfg.AckWait = consumer.SeedAckWait
		if a.MaxAckWait > 0 {
			cfg.AckWait = min(cfg.AckWait, a.MaxAckWait)
		}
	}
	switch {
	case cfg.AckWait < consumer.MinAckWait:
		return fmt.Errorf("%w: config.ack_wait %v: must be at least %v%s", errs.ErrInvalidArgument, cfg.AckWait, consumer.MinAckWait, asItStands(cfg.AckWait == was.AckWait))
	case a.MaxAckWait > 0 && cfg.AckWait > a.MaxAckWait:
		return fmt.Errorf("%w: config.ack_wait %v: the admin block allows at most %v%s", errs.ErrAdminBound, cfg.AckWait, a.MaxAckWait, asItStands(cfg.AckWait == was.AckWait))
	}
	for i, b := range cfg.BackOff {
		switch {
		case b < consumer.MinAckWait:
			return fmt.Errorf("%w: config.backoff[%d] %v: every step must be at least %v", errs.ErrInvalidArgument, i, b, consumer.MinAckWait)
		case a.MaxAckWait > 0 && b > a.MaxAckWait:
			return fmt.Errorf("%w: config.backoff[%d] %v: the admin block allows at most %v", errs.ErrAdminBound, i, b, a.MaxAckWait)
		}
	}
	if n := len(cfg.BackOff); cfg.MaxDeliver > 0 && n > cfg.MaxDeliver {
		why := errs.ErrInvalidArgument
		if a.MaxDeliver > 0 && n > a.MaxDeliver {
			why = errs.ErrAdminBound // no max_deliver the block allows would do
		}
		return fmt.Errorf("%w: config.backoff: %d steps, more than max_deliver %d deliveries (the server requires no more)", why, n, cfg.MaxDeliver)
	}
	return idleBound(a.InactiveThreshold, cfg, was, update, limits)
}

// NoInactiveThreshold is an inactive_threshold asked for as none (0s said,
// not left out): the server's 0, refused under an admin bound.
const NoInactiveThreshold time.Duration = -1

// idleBound keeps cfg's inactive_threshold within the admin bound most: left
// out of a create, or named in an update's mask without a value where the
// consumer had one, it is the bound (no more than the stream's limit).
// None, asked for or the consumer's as it stands, is above any bound.
func idleBound(most time.Duration, cfg, was *jetstream.ConsumerConfig, update bool, limits jetstream.StreamConsumerLimits) error {
	none := cfg.InactiveThreshold == NoInactiveThreshold || update && cfg.InactiveThreshold == 0 && was.InactiveThreshold == 0
	switch {
	case most > 0 && none:
		return fmt.Errorf("%w: config.inactive_threshold none (never deleted unused): the admin block allows at most %v%s",
			errs.ErrAdminBound, most, asItStands(cfg.InactiveThreshold == 0))
	case most > 0 && cfg.InactiveThreshold > most:
		return fmt.Errorf("%w: config.inactive_threshold %v: the admin block allows at most %v%s",
			errs.ErrAdminBound, cfg.InactiveThreshold, most, asItStands(cfg.InactiveThreshold == was.InactiveThreshold))
	case cfg.InactiveThreshold == NoInactiveThreshold:
		cfg.InactiveThreshold = 0
	case most > 0 && cfg.InactiveThreshold == 0:
		cfg.InactiveThreshold = most
		if l := limits.InactiveThreshold; l > 0 {
			cfg.InactiveThreshold = min(cfg.InactiveThreshold, l)
		}
	}
	return nil
}

// intBound is one integer field of a consumer's configuration and its
// admin bound: most (0: none), and limit, the server's, which a value
// filled in keeps within.
type intBound struct {
	field       string
	v           *int
	was         int // the consumer's as it stands, for an update
	most, limit int
	fixed       bool // an update, of a field the server does not change
}

// fill puts the bound where the field is unset (0: left out of a create,
// or reset by an update that names it without a value), and refuses a
// value above the bound or below 0 (the server's unlimited).
func (b intBound) fill() error {
	switch {
	case b.most == 0 || *b.v > 0 && *b.v <= b.most || b.fixed && *b.v == b.was:
		return nil
	case *b.v == 0:
		*b.v = b.most
		if b.limit > 0 {
			*b.v = min(b.most, b.limit)
		}
		return nil
	}
	v := strconv.Itoa(*b.v)
	if *b.v < 0 {
		v += " (unlimited)"
	}
	return fmt.Errorf("%w: config.%s %s: the admin block allows at most %d%s", errs.ErrAdminBound, b.field, v, b.most, asItStands(*b.v == b.was))
}

// asItStands says, where a refused value is the consumer's as it stands
// (an update that did not change it: one made before the bound or the
// check), how to mend it.
func asItStands(unchanged bool) string {
	if !unchanged {
		return ""
	}
	return "; it is the consumer's as it stands (made before this bound): an update must bring it within, " +
		"naming the field in update_mask (updateMask over REST) whatever else it changes"
}
