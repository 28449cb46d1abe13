package server

import "errors"

// Domain errors. Each is matched with errors.Is and translated to a gRPC
// status, once, by toStatus (status.go) or to a per-token failure by
// failureOf.
var (
	// ErrInvalidArgument marks a malformed request; the wrapping error's text
	// says which field and is safe to show the caller.
	ErrInvalidArgument = errors.New("invalid argument")

	// ErrConsumerNotFound is a stream/consumer pair this gateway does not serve,
	// or a consumer the server deleted.
	ErrConsumerNotFound = errors.New("consumer not found")

	// ErrStreamNotFound is a stream this gateway does not serve.
	ErrStreamNotFound = errors.New("stream not found")

	// ErrUnavailable is NATS being unreachable or not answering in time.
	ErrUnavailable = errors.New("nats unavailable")

	// ErrTokenInvalid is a token that does not decode or whose signature does
	// not verify: forged, altered, truncated or signed with an unknown key.
	ErrTokenInvalid = errors.New("token invalid")

	// ErrTokenWrongConsumer is a genuine token issued for another consumer.
	ErrTokenWrongConsumer = errors.New("token issued for another consumer")

	// ErrLeaseExpired is a lease whose deadline has passed, or that a newer
	// delivery of the same message replaced. Nothing is sent to NATS for it.
	ErrLeaseExpired = errors.New("lease expired")

	// ErrLeaseSettled is a lease already settled in another way (a Nak after
	// an Ack, or an Extend after either).
	ErrLeaseSettled = errors.New("lease already settled")

	// ErrSettleInProgress is a lease with another settle still in flight.
	ErrSettleInProgress = errors.New("settle in progress")

	// ErrSubjectNotAllowed is a publish subject outside the stream's subjects.
	ErrSubjectNotAllowed = errors.New("subject not allowed")
)
