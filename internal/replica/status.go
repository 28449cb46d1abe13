package replica

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/deadletter"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/push"
)

// ConsumerStatus is a consumer's info from the server, this replica's count
// of live leases on it, its dead letters and its oldest unacknowledged
// message.
type ConsumerStatus struct {
	Info             *jetstream.ConsumerInfo
	GatewayLeases    int
	DeadLetters      int64
	OldestUnackedAge time.Duration
	Push             *push.State // nil: not pushed
}

// Consumer returns the consumer's configuration and state.
func (l *lister) Consumer(ctx context.Context, stream, name string) (ConsumerStatus, error) {
	c, done, err := l.binder.consumer(ctx, stream, name)
	if err != nil {
		return ConsumerStatus{}, err
	}
	defer done()
	return l.status(ctx, c)
}

func (l *lister) status(ctx context.Context, c *consumer.Consumer) (ConsumerStatus, error) {
	ci, err := c.Info(ctx)
	if err != nil {
		return ConsumerStatus{}, err
	}
	st := ConsumerStatus{Info: ci, GatewayLeases: c.Leases(), Push: l.pushers.pushState(c)}
	if st.OldestUnackedAge, err = c.OldestUnackedAge(ctx, ci); err != nil {
		return ConsumerStatus{}, err
	}
	if route, ok := l.deadLetters.routes[consumerKey{c.Stream, c.Name}]; ok {
		// No stream on its subject now (deleted): none waits, and the
		// consumer is still shown.
		st.DeadLetters, err = deadletter.Count(ctx, l.js, route)
		if err != nil && !errors.Is(err, errs.ErrDeadLetterStreamNotFound) {
			return ConsumerStatus{}, fmt.Errorf("%w: count dead letters: %v", errs.ErrUnavailable, err)
		}
	}
	return st, nil
}

// PullUse is how a replica uses its share of a consumer's waiting pulls.
type PullUse struct {
	Open, Allowed, Queued int // see consumer.Consumer.Pulls
	Abandoned             int // left open by callers that went away
	Replicas              int // serving the consumer, this one included
}

// Pulls reports how the replica uses its share of a consumer's pulls.
func (r *Replica) Pulls(stream, name string) (PullUse, error) {
	c := r.bound(stream, name)
	if c == nil {
		return PullUse{}, notServed(consumerKey{stream, name})
	}
	open, allowed, queued := c.Pulls()
	return PullUse{Open: open, Allowed: allowed, Queued: queued, Abandoned: c.AbandonedPulls(), Replicas: c.Replicas()}, nil
}
