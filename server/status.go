package server

import (
	"context"
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errorDomain is the ErrorInfo domain of every jetgate error.
const errorDomain = "jetgate"

// Errors that only this package raises.
var (
	// errPullRefused is a pull request the server rejected (logged in full).
	errPullRefused = errors.New("pull request refused")
	// errPublishRefused is a publish the stream refused.
	errPublishRefused = errors.New("publish refused")
)

// kind is how one domain error is shown to callers: its code, its reason,
// and whether the error's own text (always written by this package) may be
// shown, or a fixed message instead.
type kind struct {
	err     error
	code    codes.Code
	reason  string
	message string // "" shows the error's text
}

var kinds = []kind{
	{ErrInvalidArgument, codes.InvalidArgument, "INVALID_ARGUMENT", ""},
	{ErrConsumerNotFound, codes.NotFound, "CONSUMER_NOT_FOUND", ""},
	{ErrStreamNotFound, codes.NotFound, "STREAM_NOT_FOUND", ""},
	{ErrSubjectNotAllowed, codes.InvalidArgument, "SUBJECT_NOT_ALLOWED", ""},
	{ErrTokenInvalid, codes.InvalidArgument, "TOKEN_INVALID",
		"the token was not issued by this gateway's key, or was altered or cut short"},
	{ErrTokenWrongConsumer, codes.InvalidArgument, "TOKEN_WRONG_CONSUMER",
		"the token was issued for another stream or consumer"},
	{ErrLeaseExpired, codes.FailedPrecondition, "LEASE_EXPIRED",
		"the lease has passed its deadline (or a newer delivery replaced it); the message will be redelivered, settle that delivery instead"},
	{ErrLeaseSettled, codes.FailedPrecondition, "LEASE_SETTLED",
		"the lease was already settled in another way"},
	{ErrSettleInProgress, codes.Aborted, "SETTLE_IN_PROGRESS",
		"another settle of this lease is in flight; retry"},
	{ErrUnavailable, codes.Unavailable, "NATS_UNAVAILABLE",
		"NATS JetStream is unavailable or did not answer in time; retry"},
	{errPullRefused, codes.FailedPrecondition, "PULL_REFUSED",
		"the NATS server refused the pull request; see the gateway log"},
	{errPublishRefused, codes.FailedPrecondition, "PUBLISH_REFUSED", ""},
	{context.DeadlineExceeded, codes.DeadlineExceeded, "DEADLINE_EXCEEDED", "the deadline passed"},
	{context.Canceled, codes.Canceled, "CANCELED", "the request was canceled"},
}

var internal = kind{nil, codes.Internal, "INTERNAL", "internal error; see the gateway log"}

func kindOf(err error) kind {
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k
		}
	}
	return internal
}

func (k kind) text(err error) string {
	if k.message != "" {
		return k.message
	}
	return err.Error()
}

// toStatus translates a domain error into a gRPC status with an ErrorInfo.
// It is the one place errors cross into the API.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	k := kindOf(err)
	st := status.New(k.code, k.text(err))
	if d, derr := st.WithDetails(&errdetails.ErrorInfo{Reason: k.reason, Domain: errorDomain}); derr == nil {
		st = d
	}
	return st.Err()
}

// failureOf is how a per-token error is reported.
func failureOf(err error) (codes.Code, string, string) {
	k := kindOf(err)
	return k.code, k.reason, k.text(err)
}

// reasonOf and errorOfReason carry per-token errors between replicas.
func reasonOf(err error) string {
	if err == nil {
		return ""
	}
	return kindOf(err).reason
}

func errorOfReason(reason string) error {
	if reason == "" {
		return nil
	}
	for _, k := range kinds {
		if k.reason == reason {
			return k.err
		}
	}
	return errors.New(reason)
}
