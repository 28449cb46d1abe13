package pull

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Errors of the pull protocol that nats.go's jetstream package has no
// sentinel for. The others are jetstream's own: ErrNoMessages,
// ErrMaxBytesExceeded, ErrBatchCompleted, ErrConsumerDeleted,
// ErrConsumerLeadershipChanged, ErrServerShutdown and ErrNoHeartbeat.
var (
	// ErrRequestsPending is a no_wait pull refused at once because other
	// pulls already wait for more than is pending (408 Requests Pending):
	// the consumer is at max_ack_pending.
	ErrRequestsPending = errors.New("requests pending")

	// ErrExceededMaxWaiting is a pull refused because the consumer already
	// has max_waiting pulls waiting (409 Exceeded MaxWaiting).
	ErrExceededMaxWaiting = errors.New("exceeded max waiting")

	// ErrRefused is any other refusal; the StatusError that wraps it has the
	// server's words, for the log.
	ErrRefused = errors.New("pull refused")
)

// StatusError is a status the server ended a pull with that jetgate has no
// meaning for (a limit of the consumer's, such as max_batch or
// max_expires, or a status it does not know).
type StatusError struct {
	Code, Description string
}

func (e *StatusError) Error() string { return fmt.Sprintf("status %s %s", e.Code, e.Description) }

// Unwrap makes a StatusError match ErrRefused.
func (e *StatusError) Unwrap() error { return ErrRefused }

// statusError turns the status that ended a pull into a sentinel error. It
// is the one place the server's status codes and descriptions are read.
func statusError(code, desc string) error {
	switch code {
	case "404":
		return jetstream.ErrNoMessages
	case "408":
		if desc == "Requests Pending" {
			return ErrRequestsPending
		}
		return jetstream.ErrNoMessages // the pull expired
	case "409":
		switch desc {
		case "Consumer Deleted":
			return jetstream.ErrConsumerDeleted
		case "Leadership Change":
			return jetstream.ErrConsumerLeadershipChanged
		case "Message Size Exceeds MaxBytes":
			return jetstream.ErrMaxBytesExceeded
		case "Exceeded MaxWaiting":
			return ErrExceededMaxWaiting
		case "Server Shutdown":
			return jetstream.ErrServerShutdown
		case "Batch Completed":
			return jetstream.ErrBatchCompleted
		}
	case "503":
		return nats.ErrNoResponders
	}
	return &StatusError{Code: code, Description: desc}
}
