package deadletter

import (
	"errors"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// tooBig reports whether a publish failed for its size: over NATS's
// max_payload, or over its stream's max_msg_size.
func tooBig(err error) bool {
	return errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, jetstream.ErrStreamMessageExceedsMaximum)
}

// deadHeader is one of the headers a dead letter is given (Jetgate-Dead-*):
// the original's own are dropped, where a publisher set them.
func deadHeader(k string) bool {
	const prefix = "Jetgate-Dead-"
	return len(k) >= len(prefix) && strings.EqualFold(k[:len(prefix)], prefix)
}

// reservedHeader is a header the server acts on when it stores a message
// (Nats-Msg-Id, Nats-Rollup, Nats-TTL, …): not copied into a dead letter or
// a redrive, where it would act again.
func reservedHeader(k string) bool { return len(k) >= 5 && strings.EqualFold(k[:5], "Nats-") }
