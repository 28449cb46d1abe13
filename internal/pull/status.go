package pull

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Errors of the pull protocol that nats.go's jetstream package has no
// sentinel for. The others are jetstream's own: ErrNoMessages,
// ErrMaxBytesExceeded, ErrBatchCompleted, ErrConsumerDeleted,
// ErrConsumerLeadershipChanged, ErrServerShutdown, ErrPinIDMismatch and
// ErrNoHeartbeat.
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
		if has(desc, "requests pending") {
			return ErrRequestsPending
		}
		return jetstream.ErrNoMessages // the pull expired
	case "409":
		// Matched as nats.go matches them: by words, whatever their case.
		switch {
		case has(desc, "consumer deleted"):
			return jetstream.ErrConsumerDeleted
		case has(desc, "leadership change"):
			return jetstream.ErrConsumerLeadershipChanged
		case has(desc, "message size exceeds maxbytes"):
			return jetstream.ErrMaxBytesExceeded
		case has(desc, "exceeded maxwaiting"):
			return ErrExceededMaxWaiting
		case has(desc, "server shutdown"):
			return jetstream.ErrServerShutdown
		case has(desc, "batch completed"):
			return jetstream.ErrBatchCompleted
		}
	case "423":
		return jetstream.ErrPinIDMismatch // a pinned_client group pinned to another
	case "503":
		return nats.ErrNoResponders
	}
	return &StatusError{Code: code, Description: desc}
}

// ReplyStatus reads the status of a reply to a request (a settle, a
// forwarded settle): nil when it has none, nats.ErrNoResponders for 503
// (nothing listens on the subject), else a StatusError. It is the one place
// a reply's status is read.
func ReplyStatus(m *nats.Msg) error {
	switch code := m.Header.Get("Status"); code {
	case "":
		return nil
	case "503":
		return nats.ErrNoResponders
	default:
		return &StatusError{Code: code, Description: m.Header.Get("Description")}
	}
}

func has(desc, words string) bool { return strings.Contains(strings.ToLower(desc), words) }
