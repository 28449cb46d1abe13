// Package errs holds jetgate's domain errors: every sentinel the core
// returns, each with the UPPER_SNAKE reason callers see. The gRPC face maps
// them to status codes (server/status.go); replicas carry them between each
// other by reason (Reason, FromReason).
package errs

import (
	"context"
	"errors"
)

// Domain errors, matched with errors.Is.
var (
	// ErrInvalidArgument marks a malformed request; the wrapping error's text
	// says which field and is safe to show the caller.
	ErrInvalidArgument = errors.New("invalid argument")

	// ErrUnauthenticated is a caller without good credentials.
	ErrUnauthenticated = errors.New("unauthenticated")

	// ErrPermissionDenied is a caller without a grant for what it asks.
	ErrPermissionDenied = errors.New("permission denied")

	// ErrConsumerNotFound is a stream/consumer pair this gateway does not
	// serve, or a consumer the server deleted.
	ErrConsumerNotFound = errors.New("consumer not found")

	// ErrStreamNotFound is a stream this gateway does not serve.
	ErrStreamNotFound = errors.New("stream not found")

	// ErrUnavailable is NATS being unreachable or not answering in time.
	ErrUnavailable = errors.New("nats unavailable")

	// ErrStopping is a call this gateway refuses, or a stream it ends, as it
	// stops: the caller goes on through another replica, or this one
	// started again. It is an ErrUnavailable too (the same code, retried
	// the same way), with a reason of its own, so that a stop is not taken
	// for NATS being away.
	ErrStopping error = alsoUnavailable("gateway stopping")

	// ErrIssuerUnavailable is a settle forwarded to the replica that issued
	// its token that this replica got no answer to in time: the issuer is
	// stopped, frozen or starved while NATS answers. It is an
	// ErrUnavailable too, retried the same way, with a reason of its own,
	// so that it is not taken for NATS being away.
	ErrIssuerUnavailable error = alsoUnavailable("issuer unavailable")

	// ErrTokenInvalid is a token that does not decode or whose signature does
	// not verify: forged, altered or truncated.
	ErrTokenInvalid = errors.New("token invalid")

	// ErrTokenUnknownKey is a token whose key id no key of this gateway
	// has: issued by a gateway with another token key (or by this one
	// before a restart on a random key).
	ErrTokenUnknownKey = errors.New("token signed by an unknown key")

	// ErrTokenWrongConsumer is a genuine token issued for another consumer.
	ErrTokenWrongConsumer = errors.New("token issued for another consumer")

	// ErrTokenWrongPrincipal is a genuine token issued to another caller.
	ErrTokenWrongPrincipal = errors.New("token issued to another principal")

	// ErrLeaseExpired is a lease whose deadline has passed, or that a newer
	// delivery of the same message replaced. Nothing is sent to NATS for it.
	ErrLeaseExpired = errors.New("lease expired")

	// ErrLeaseSettled is a lease already settled in another way (a Nak after
	// an Ack, or an Extend after either).
	ErrLeaseSettled = errors.New("lease already settled")

	// ErrSettleInProgress is a lease with another settle still in flight.
	ErrSettleInProgress = errors.New("settle in progress")

	// ErrIssuerGone is a forwarded settle that the issuing replica could
	// not take because it is shutting down: the caller acts on the tokens
	// alone, as when nothing answers.
	ErrIssuerGone = errors.New("issuer gone")

	// ErrSubjectNotAllowed is a publish subject outside the stream's subjects.
	ErrSubjectNotAllowed = errors.New("subject not allowed")

	// ErrHeaderReserved is a publish header whose name NATS reserves (one
	// starting with Nats-, other than the Nats-Expected-* checks): it would
	// make the server roll up, expire or deduplicate messages on the
	// caller's say.
	ErrHeaderReserved = errors.New("header reserved")

	// ErrHeaderInvalid is a publish header whose name NATS refuses (nats.go's
	// rule: printable ASCII but for "()/,:;<=>?@[\]{}): sent, it would fail
	// the publish, not the request.
	ErrHeaderInvalid = errors.New("header invalid")

	// ErrSubjectTooLong is a publish subject longer than a NATS server takes
	// in one protocol line: sent, it would close the connection.
	ErrSubjectTooLong = errors.New("subject too long")

	// ErrPayloadTooLarge is a message to publish (data and headers) larger
	// than the NATS server's max_payload.
	ErrPayloadTooLarge = errors.New("payload too large")

	// ErrHeadersTooLarge is a message to publish whose headers pass the
	// gateway's bound on them.
	ErrHeadersTooLarge = errors.New("headers too large")

	// ErrMessageTooLarge is a message larger than one Fetch may return: the
	// server does not deliver it to a pull bounded below its size.
	ErrMessageTooLarge = errors.New("message too large")

	// ErrNoDeadLetter is a Redrive of a consumer that has no dead_letter.
	ErrNoDeadLetter = errors.New("no dead letter configured")

	// ErrDeadLetterNotFound is a dead-letter sequence that is not a dead
	// letter of the consumer (or whose original message is gone).
	ErrDeadLetterNotFound = errors.New("dead letter not found")

	// ErrDeadLetterStreamNotFound is a consumer's dead-letter subject that no
	// stream binds now (its stream deleted since the start).
	ErrDeadLetterStreamNotFound = errors.New("dead-letter stream not found")

	// ErrDeadLetterStreamDeniesDelete is a Redrive from a dead-letter stream
	// whose letters cannot be removed (deny_delete, sealed).
	ErrDeadLetterStreamDeniesDelete = errors.New("dead-letter stream denies deletes")

	// ErrPullRefused is a pull request the server rejected (logged in full).
	ErrPullRefused = errors.New("pull request refused")

	// ErrPublishRefused is a publish the stream refused.
	ErrPublishRefused = errors.New("publish refused")

	// ErrTTLNotAllowed is a message ttl for a stream without allow_msg_ttl.
	ErrTTLNotAllowed = errors.New("ttl not allowed")

	// ErrBatchNotAllowed is an atomic batch for a stream without
	// allow_atomic.
	ErrBatchNotAllowed = errors.New("atomic batch not allowed")

	// ErrManageRefused is a Pause, Resume or Unpin the server refused.
	ErrManageRefused = errors.New("refused by the server")

	// ErrPriorityGroupRequired is a pull of a consumer with several priority
	// groups that names none.
	ErrPriorityGroupRequired = errors.New("priority group required")

	// ErrPinIDMismatch is a pull of a pinned_client group that is pinned to
	// another client (the server's 423): nothing was leased.
	ErrPinIDMismatch = errors.New("pin id mismatch")

	// ErrSeekUnsupported is a Seek on a NATS server without the consumer
	// reset API (before 2.14).
	ErrSeekUnsupported = errors.New("seek unsupported by the NATS server")

	// ErrSeekTimeInFuture is a Seek to a time that has not come yet.
	ErrSeekTimeInFuture = errors.New("seek time in the future")

	// ErrSeekBelowStart is a Seek below where the consumer's deliver policy
	// starts (opt_start_seq, opt_start_time).
	ErrSeekBelowStart = errors.New("seek below the consumer's start")

	// ErrSeekNotAllowed is a Seek to a sequence or time of a consumer whose
	// deliver policy (last, new, last_per_subject) has no such start.
	ErrSeekNotAllowed = errors.New("seek not allowed by the deliver policy")

	// ErrAdminDisabled is a Create, Update or Delete of a consumer on a
	// gateway whose configuration has no admin block.
	ErrAdminDisabled = errors.New("consumers through the API are off")

	// ErrAdminBound is a consumer configuration outside the admin block's
	// bounds, or with what jetgate cannot serve.
	ErrAdminBound = errors.New("outside the admin bounds")

	// ErrConsumerConfigured is a Create, Update or Delete of a consumer of
	// the gateway's own configuration.
	ErrConsumerConfigured = errors.New("consumer of the gateway's configuration")

	// ErrConsumerNotCreatedByAPI is an Update or Delete of a consumer that
	// was not created through the API.
	ErrConsumerNotCreatedByAPI = errors.New("consumer not created through the API")

	// ErrConsumerExists is a Create of a consumer that exists.
	ErrConsumerExists = errors.New("consumer exists")

	// ErrConsumerQuota is a Create past the consumers one principal may own.
	ErrConsumerQuota = errors.New("consumer quota exceeded")

	// ErrConsumerBusy is a create, update or delete of a consumer through
	// the API that waited its bound for another change of the same consumer
	// (through any replica) to end; the wrapping error says for how long.
	ErrConsumerBusy = errors.New("consumer busy")
)

// reasons names each domain error as callers and replicas see it. Order
// matters where one error wraps another: the first match wins.
var reasons = []struct {
	err    error
	reason string
}{
	{ErrInvalidArgument, "INVALID_ARGUMENT"},
	{ErrUnauthenticated, "UNAUTHENTICATED"},
	{ErrPermissionDenied, "PERMISSION_DENIED"},
	{ErrConsumerNotFound, "CONSUMER_NOT_FOUND"},
	{ErrStreamNotFound, "STREAM_NOT_FOUND"},
	{ErrSubjectNotAllowed, "SUBJECT_NOT_ALLOWED"},
	{ErrHeaderReserved, "HEADER_RESERVED"},
	{ErrHeaderInvalid, "HEADER_INVALID"},
	{ErrSubjectTooLong, "SUBJECT_TOO_LONG"},
	{ErrPayloadTooLarge, "PAYLOAD_TOO_LARGE"},
	{ErrHeadersTooLarge, "HEADERS_TOO_LARGE"},
	{ErrTokenInvalid, "TOKEN_INVALID"},
	{ErrTokenUnknownKey, "TOKEN_UNKNOWN_KEY"},
	{ErrTokenWrongConsumer, "TOKEN_WRONG_CONSUMER"},
	{ErrTokenWrongPrincipal, "TOKEN_WRONG_PRINCIPAL"},
	{ErrLeaseExpired, "LEASE_EXPIRED"},
	{ErrLeaseSettled, "LEASE_SETTLED"},
	{ErrSettleInProgress, "SETTLE_IN_PROGRESS"},
	{ErrStopping, "GATEWAY_STOPPING"}, // before ErrUnavailable, which it also is
	{ErrIssuerUnavailable, "ISSUER_UNAVAILABLE"},
	{ErrUnavailable, "NATS_UNAVAILABLE"},
	{ErrIssuerGone, "ISSUER_GONE"},
	{ErrMessageTooLarge, "MESSAGE_TOO_LARGE"},
	{ErrNoDeadLetter, "NO_DEAD_LETTER"},
	{ErrDeadLetterNotFound, "DEAD_LETTER_NOT_FOUND"},
	{ErrDeadLetterStreamNotFound, "DEAD_LETTER_STREAM_NOT_FOUND"},
	{ErrDeadLetterStreamDeniesDelete, "DEAD_LETTER_STREAM_DENIES_DELETE"},
	{ErrPullRefused, "PULL_REFUSED"},
	{ErrPublishRefused, "PUBLISH_REFUSED"},
	{ErrTTLNotAllowed, "TTL_NOT_ALLOWED"},
	{ErrBatchNotAllowed, "BATCH_NOT_ALLOWED"},
	{ErrManageRefused, "MANAGE_REFUSED"},
	{ErrPriorityGroupRequired, "PRIORITY_GROUP_REQUIRED"},
	{ErrPinIDMismatch, "PIN_ID_MISMATCH"},
	{ErrSeekUnsupported, "SEEK_UNSUPPORTED"},
	{ErrSeekTimeInFuture, "SEEK_TIME_IN_FUTURE"},
	{ErrSeekBelowStart, "SEEK_BELOW_START"},
	{ErrSeekNotAllowed, "SEEK_NOT_ALLOWED"},
	{ErrAdminDisabled, "ADMIN_DISABLED"},
	{ErrAdminBound, "ADMIN_BOUND"},
	{ErrConsumerConfigured, "CONSUMER_CONFIGURED"},
	{ErrConsumerNotCreatedByAPI, "CONSUMER_NOT_CREATED_BY_API"},
	{ErrConsumerExists, "CONSUMER_EXISTS"},
	{ErrConsumerQuota, "CONSUMER_QUOTA_EXCEEDED"},
	{ErrConsumerBusy, "CONSUMER_BUSY"},
	{context.DeadlineExceeded, "DEADLINE_EXCEEDED"},
	{context.Canceled, "CANCELED"},
}

// alsoUnavailable is an ErrUnavailable with a reason of its own.
type alsoUnavailable string

func (e alsoUnavailable) Error() string      { return string(e) }
func (alsoUnavailable) Is(target error) bool { return target == ErrUnavailable }

// CallerSilent marks a stream ended because its caller read, settled or
// extended nothing for too long: the wrapping error's text says which and
// for how long, and is shown to the caller. It is a mark, not a sentinel of
// its own: a context.DeadlineExceeded, whose reason, DEADLINE_EXCEEDED, it
// keeps.
var CallerSilent error = callerSilent{}

// callerSilent is CallerSilent.
type callerSilent struct{}

func (callerSilent) Error() string        { return "the stream ended" }
func (callerSilent) Is(target error) bool { return target == context.DeadlineExceeded }

// Fixed texts a caller reads where an error's own text is not for them, on
// gRPC and REST alike.
const (
	TextCanceled = "the request was canceled"
	TextDeadline = "the deadline passed"
	TextInternal = "internal error; see the gateway log"
)

// ReasonInternal is the reason of an error that is none of the above.
const ReasonInternal = "INTERNAL"

// Reason returns err's reason: "" for nil, ReasonInternal for an error that
// is not a domain error.
func Reason(err error) string {
	if err == nil {
		return ""
	}
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.reason
		}
	}
	return ReasonInternal
}

// FromReason is the domain error a reason names, nil for "". An unknown
// reason (from a newer replica) is an error of its own, reported as internal.
func FromReason(reason string) error {
	if reason == "" {
		return nil
	}
	for _, r := range reasons {
		if r.reason == reason {
			return r.err
		}
	}
	return errors.New(reason)
}
