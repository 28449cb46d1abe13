package app

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
)

// Start-up waits out what says NATS or JetStream is not there yet, and
// stops on what the server answers definitely.
func TestY3UnavailableIsOnlyNotThereYet(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nats.ErrNoServers, true},
		{fmt.Errorf("look up stream: %w", nats.ErrNoResponders), true},
		{context.DeadlineExceeded, true},
		{nats.ErrTimeout, true},
		{nats.ErrReconnectBufExceeded, true},
		{jetstream.ErrJetStreamNotEnabled, true},
		{&jetstream.APIError{ErrorCode: 10008, Code: 503, Description: "JetStream system temporarily unavailable"}, true},
		{&consumer.RefusedError{Stream: "ORDERS", Name: "billing", Op: "create", Reason: "consumer is offline", Code: 10119}, true},
		{&consumer.RefusedError{Stream: "ORDERS", Name: "billing", Op: "update", Reason: "deliver policy can not be updated", Code: 10012}, false},
		{&jetstream.APIError{ErrorCode: 10065, Code: 400, Description: "subjects overlap with an existing stream"}, false},
		{nats.ErrAuthorization, false},
		{context.Canceled, false},
		{errors.New("x509: certificate signed by unknown authority"), false},
	} {
		if got := unavailable(tc.err); got != tc.want {
			t.Errorf("unavailable(%v) = %v; want %v", tc.err, got, tc.want)
		}
	}
}
