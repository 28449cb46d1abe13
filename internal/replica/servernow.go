package replica

import (
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

// limitsNow is stream, with the limits the server holds a consumer of it
// to: the stream's limits for its consumers, and the account's
// max_ack_pending where that is lower (the server refuses a consumer above
// either, and fills its own default within both). An account whose limits
// are tiered by replicas has them in the tier of the consumer's replicas
// (the stream's, where the consumer sets none).
func (m *manager) limitsNow(ctx context.Context, stream string, replicas int) (jetstream.Stream, jetstream.StreamConsumerLimits, error) {
	s, si, err := m.streamNow(ctx, stream)
	if err != nil {
		return nil, jetstream.StreamConsumerLimits{}, err
	}
	limits := si.Config.ConsumerLimits
	ai, err := m.js.AccountInfo(ctx)
	if err != nil {
		return nil, limits, fmt.Errorf("%w: account info: %v", errs.ErrUnavailable, err)
	}
	if replicas == 0 {
		replicas = si.Config.Replicas
	}
	account := ai.Limits
	if t, ok := ai.Tiers[fmt.Sprintf("R%d", max(replicas, 1))]; ok {
		account = t.Limits
	}
	if l := account.MaxAckPending; l > 0 && (limits.MaxAckPending <= 0 || l < limits.MaxAckPending) {
		limits.MaxAckPending = l
	}
	return s, limits, nil
}
