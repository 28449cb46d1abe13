package bench

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// publisher stores the messages a mode consumes; it is not part of what is
// measured.
type publisher interface {
	// publish stores n messages on subject and returns once all are stored.
	publish(ctx context.Context, subject string, n int) error
}

// natsPublisher publishes with nats.go, asynchronously for many messages.
type natsPublisher struct {
	js   jetstream.JetStream
	data []byte
}

func newNATSPublisher(nc *nats.Conn, o Options) (natsPublisher, error) {
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(1024))
	if err != nil {
		return natsPublisher{}, err
	}
	return natsPublisher{js: js, data: bytes.Repeat([]byte("x"), o.Size)}, nil
}

// stallWait bounds the wait for room among the pending async publishes.
const stallWait = 10 * time.Second

func (p natsPublisher) publish(ctx context.Context, subject string, n int) error {
	if n == 1 {
		if _, err := p.js.Publish(ctx, subject, p.data); err != nil {
			return fmt.Errorf("publish: %w", err)
		}
		return nil
	}
	acks := make([]jetstream.PubAckFuture, 0, n)
	for range n {
		// A loaded machine's server may take longer than the default
		// 200ms to make room: wait for it rather than fail the run.
		f, err := p.js.PublishAsync(subject, p.data, jetstream.WithStallWait(stallWait))
		if err != nil {
			return fmt.Errorf("publish: %w", err)
		}
		acks = append(acks, f)
	}
	select {
	case <-p.js.PublishAsyncComplete():
	case <-ctx.Done():
		return ctx.Err()
	}
	for _, f := range acks {
		select {
		case err := <-f.Err():
			return fmt.Errorf("publish: %w", err)
		default:
		}
	}
	return nil
}

// gatewayPublisher publishes through jetgate's Publish, for a running
// jetgate whose NATS server the bench was not told.
type gatewayPublisher struct {
	strm jetgatev1.StreamServiceClient
	o    Options
}

func (p gatewayPublisher) publish(ctx context.Context, subject string, n int) error {
	data := bytes.Repeat([]byte("x"), p.o.Size)
	for range n {
		if _, err := p.strm.Publish(ctx, &jetgatev1.PublishRequest{Stream: p.o.Stream, Subject: subject, Data: data}); err != nil {
			return fmt.Errorf("publish: %w", err)
		}
	}
	return nil
}
