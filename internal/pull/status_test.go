package pull

import (
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// statusSentinels are all the errors statusError may return by identity; a
// status must match exactly one of them.
var statusSentinels = []error{
	jetstream.ErrNoMessages,
	jetstream.ErrConsumerDeleted,
	jetstream.ErrConsumerLeadershipChanged,
	jetstream.ErrMaxBytesExceeded,
	jetstream.ErrServerShutdown,
	jetstream.ErrBatchCompleted,
	jetstream.ErrPinIDMismatch,
	ErrRequestsPending,
	ErrExceededMaxWaiting,
	nats.ErrNoResponders,
	ErrRefused,
}

// The codes and descriptions are the ones nats-server 2.15 writes
// (consumer.go sendErr, processWaiting; jetstream.go for Server Shutdown).
func TestStatusErrorKnownStatuses(t *testing.T) {
	tests := []struct {
		code, desc string
		want       error
	}{
		{"404", "No Messages", jetstream.ErrNoMessages},
		{"408", "Request Timeout", jetstream.ErrNoMessages},
		{"408", "Interest Expired", jetstream.ErrNoMessages},
		{"408", "", jetstream.ErrNoMessages},
		{"408", "Requests Pending", ErrRequestsPending},
		{"409", "Consumer Deleted", jetstream.ErrConsumerDeleted},
		{"409", "Leadership Change", jetstream.ErrConsumerLeadershipChanged},
		{"409", "Message Size Exceeds MaxBytes", jetstream.ErrMaxBytesExceeded},
		{"409", "Exceeded MaxWaiting", ErrExceededMaxWaiting},
		{"409", "Server Shutdown", jetstream.ErrServerShutdown},
		{"409", "Batch Completed", jetstream.ErrBatchCompleted},
		{"423", "Nats-Pin-Id mismatch", jetstream.ErrPinIDMismatch},
		{"503", "", nats.ErrNoResponders},
		{"503", "No Responders", nats.ErrNoResponders},
	}
	for _, tt := range tests {
		t.Run(tt.code+" "+tt.desc, func(t *testing.T) {
			err := statusError(tt.code, tt.desc)
			if !errors.Is(err, tt.want) {
				t.Fatalf("statusError(%q, %q) = %v, want %v", tt.code, tt.desc, err, tt.want)
			}
			for _, other := range statusSentinels {
				if other != tt.want && errors.Is(err, other) {
					t.Errorf("statusError(%q, %q) = %v also matches %v", tt.code, tt.desc, err, other)
				}
			}
			var se *StatusError
			if errors.As(err, &se) {
				t.Errorf("statusError(%q, %q) is a *StatusError %v; a known status has its own sentinel", tt.code, tt.desc, se)
			}
		})
	}
}

func TestStatusErrorUnknownStatusesAreRefusals(t *testing.T) {
	tests := []struct{ code, desc string }{
		{"409", "Exceeded MaxRequestBatch of 10"},
		{"409", "Exceeded MaxRequestExpires of 1s"},
		{"409", "Exceeded MaxRequestMaxBytes of 100"},
		{"409", "Consumer is push based"},
		{"409", ""},
		{"400", "Bad Request - invalid character"},
		{"418", "I'm a teapot"},
	}
	for _, tt := range tests {
		t.Run(tt.code+" "+tt.desc, func(t *testing.T) {
			err := statusError(tt.code, tt.desc)
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("statusError(%q, %q) = %v, want it to match ErrRefused", tt.code, tt.desc, err)
			}
			var se *StatusError
			if !errors.As(err, &se) {
				t.Fatalf("statusError(%q, %q) = %T %v, want a *StatusError", tt.code, tt.desc, err, err)
			}
			if se.Code != tt.code || se.Description != tt.desc {
				t.Errorf("StatusError{%q, %q}, want the server's {%q, %q}", se.Code, se.Description, tt.code, tt.desc)
			}
			for _, other := range statusSentinels {
				if other != ErrRefused && errors.Is(err, other) {
					t.Errorf("statusError(%q, %q) = %v also matches %v", tt.code, tt.desc, err, other)
				}
			}
		})
	}
}

func TestStatusErrorTextKeepsTheServersWords(t *testing.T) {
	err := statusError("409", "Exceeded MaxRequestBatch of 10")
	if got, want := err.Error(), "status 409 Exceeded MaxRequestBatch of 10"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
