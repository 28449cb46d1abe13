package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
)

// OldestUnackedAge is how long the oldest message the consumer has not
// acknowledged (delivered or not) has been in the stream, given the
// consumer's info: the first message of its filter past the ack floor.
func (c *Consumer) OldestUnackedAge(ctx context.Context, ci *jetstream.ConsumerInfo) (time.Duration, error) {
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
		m, err := c.jsStream.GetMsg(ctx, ci.AckFloor.Stream+1, jetstream.WithGetMsgSubject(f))
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
