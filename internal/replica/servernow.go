package replica

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
)

// What the server holds a consumer of the API to, read from it at each
// create, update and Seek rather than from what was seen when the stream
// was bound: an operator may have changed a limit since.

// streamNow is stream, with its info as the server has it now (an operator
// may have changed its limits since it was looked up, and its last
// sequence moves on).
func (m *manager) streamNow(ctx context.Context, stream string) (jetstream.Stream, *jetstream.StreamInfo, error) {
	s, err := m.binder.stream(ctx, stream)
	if err != nil {
		return nil, nil, err
	}
	si, err := s.Info(ctx)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, nil, fmt.Errorf("%w: stream %q was deleted", errs.ErrStreamNotFound, stream)
	case err != nil:
		return nil, nil, fmt.Errorf("%w: stream info: %v", errs.ErrUnavailable, err)
	}
	return s, si, nil
}

// limitsNow is stream, with the limits the server holds cfg, a consumer of
// it, to: the stream's limits for its consumers, and, where the admin block
// will fill cfg's max_ack_pending in, the account's where that is lower
// (the server refuses a consumer above either, and fills its own default
// within both). An account whose limits are tiered by replicas has them in
// the tier of the consumer's replicas (the stream's, where the consumer
// sets none). An account's info that cannot be had leaves the stream's
// limits alone: the server still refuses what is over its own.
func (m *manager) limitsNow(ctx context.Context, stream string, cfg *jetstream.ConsumerConfig) (jetstream.Stream, jetstream.StreamConsumerLimits, error) {
	s, si, err := m.streamNow(ctx, stream)
	if err != nil {
		return nil, jetstream.StreamConsumerLimits{}, err
	}
	limits := si.Config.ConsumerLimits
	if cfg.MaxAckPending != 0 || m.binder.admin.MaxAckPending == 0 {
		return s, limits, nil
	}
	ai, err := m.js.AccountInfo(ctx)
	if err != nil {
		m.log.Warn("the account's limits could not be read; max_ack_pending is filled within the stream's alone", "stream", stream, "error", err)
		return s, limits, nil
	}
	replicas := cmp.Or(cfg.Replicas, si.Config.Replicas, 1)
	account := ai.Limits
	if t, ok := ai.Tiers[fmt.Sprintf("R%d", replicas)]; ok {
		account = t.Limits
	}
	if l := account.MaxAckPending; l > 0 && (limits.MaxAckPending <= 0 || l < limits.MaxAckPending) {
		limits.MaxAckPending = l
	}
	return s, limits, nil
}
