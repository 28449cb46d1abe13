package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Config is a durable pull consumer the gateway fronts. Bootstrap sends
// AckWait, MaxAckPending and DeliverPolicy explicitly, plus the filter
// subjects and start position when given; every other field keeps the
// server's default.
type Config struct {
	Stream         string
	Name           string
	FilterSubjects []string
	AckWait        time.Duration
	MaxAckPending  int
	DeliverPolicy  jetstream.DeliverPolicy
	OptStartSeq    uint64
	OptStartTime   *time.Time
}

// bootstrap creates or updates the durable consumer c describes.
func bootstrap(ctx context.Context, js jetstream.JetStream, c Config) (jetstream.Consumer, error) {
	s, err := js.Stream(ctx, c.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("stream %q does not exist: create it, or give --stream-subjects so that jetgate creates it", c.Stream)
	}
	if err != nil {
		return nil, fmt.Errorf("look up stream %q: %w", c.Stream, err)
	}
	cfg := jetstream.ConsumerConfig{
		Durable:       c.Name,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       c.AckWait,
		MaxAckPending: c.MaxAckPending,
		DeliverPolicy: c.DeliverPolicy,
		OptStartSeq:   c.OptStartSeq,
		OptStartTime:  c.OptStartTime,
	}
	switch len(c.FilterSubjects) {
	case 0:
	case 1:
		cfg.FilterSubject = c.FilterSubjects[0]
	default:
		cfg.FilterSubjects = c.FilterSubjects
	}
	cons, err := s.CreateOrUpdateConsumer(ctx, cfg)
	if err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) {
			return nil, fmt.Errorf("stream %q consumer %q: the server refused its configuration: %s", c.Stream, c.Name, apiErr.Description)
		}
		return nil, fmt.Errorf("stream %q consumer %q: create or update: %w", c.Stream, c.Name, err)
	}
	return cons, nil
}
