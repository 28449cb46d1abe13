package server

import (
	"context"
	"errors"
	"log/slog"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jetgate/jetgate/internal/errs"
)

// errorDomain is the ErrorInfo domain of every jetgate error.
const errorDomain = "jetgate"

// kind is how one domain error is shown to callers: its code, and whether
// the error's own text (always written by jetgate) may be shown, or a fixed
// message instead. Its reason is errs.Reason's.
type kind struct {
	err     error
	code    codes.Code
	message string // "" shows the error's text
}

var kinds = []kind{
	{errs.ErrInvalidArgument, codes.InvalidArgument, ""},
	{errs.ErrUnauthenticated, codes.Unauthenticated, ""},
	{errs.ErrPermissionDenied, codes.PermissionDenied, ""},
	{errs.ErrConsumerNotFound, codes.NotFound, ""},
	{errs.ErrStreamNotFound, codes.NotFound, ""},
	{errs.ErrSubjectNotAllowed, codes.InvalidArgument, ""},
	{errs.ErrHeaderReserved, codes.InvalidArgument, ""},
	{errs.ErrHeaderInvalid, codes.InvalidArgument, ""},
	{errs.ErrSubjectTooLong, codes.InvalidArgument, ""},
	{errs.ErrPayloadTooLarge, codes.InvalidArgument, ""},
	{errs.ErrHeadersTooLarge, codes.InvalidArgument, ""},
	{errs.ErrTokenInvalid, codes.InvalidArgument,
		"the token was altered or cut short, or is not a jetgate token"},
	{errs.ErrTokenUnknownKey, codes.InvalidArgument, ""},
	{errs.ErrTokenWrongConsumer, codes.InvalidArgument,
		"the token was issued for another stream or consumer"},
	{errs.ErrTokenWrongPrincipal, codes.PermissionDenied,
		"the token was issued to another caller"},
	{errs.ErrLeaseExpired, codes.FailedPrecondition,
		"the lease has passed its deadline (or a newer delivery replaced it); the message will be redelivered, settle that delivery instead"},
	{errs.ErrLeaseSettled, codes.FailedPrecondition,
		"the lease was already settled in another way"},
	{errs.ErrSettleInProgress, codes.Aborted,
		"another settle of this lease was still in flight after the request timeout; retry"},
	{errs.ErrStopping, codes.Unavailable, ""}, // before ErrUnavailable, which it also is
	{errs.ErrIssuerUnavailable, codes.Unavailable,
		"the jetgate replica that issued the token did not answer in time (stopped or overloaded); retry"},
	{errs.ErrUnavailable, codes.Unavailable,
		"NATS JetStream is unavailable or did not answer in time; retry"},
	{errs.ErrMessageTooLarge, codes.FailedPrecondition, ""},
	{errs.ErrNoDeadLetter, codes.FailedPrecondition, ""},
	{errs.ErrDeadLetterNotFound, codes.NotFound, ""},
	{errs.ErrDeadLetterStreamNotFound, codes.FailedPrecondition, ""},
	{errs.ErrDeadLetterStreamDeniesDelete, codes.FailedPrecondition, ""},
	{errs.ErrPullRefused, codes.FailedPrecondition,
		"the NATS server refused the pull request; see the gateway log"},
	{errs.ErrPublishRefused, codes.FailedPrecondition, ""},
	{errs.ErrManageRefused, codes.FailedPrecondition, ""},
	{errs.ErrTTLNotAllowed, codes.FailedPrecondition, ""},
	{errs.ErrBatchNotAllowed, codes.FailedPrecondition, ""},
	{errs.ErrPriorityGroupRequired, codes.InvalidArgument, ""},
	{errs.ErrPinIDMismatch, codes.FailedPrecondition, ""},
	{errs.ErrSeekUnsupported, codes.FailedPrecondition, ""},
	{errs.ErrSeekTimeInFuture, codes.InvalidArgument, ""},
	{errs.ErrSeekBelowStart, codes.InvalidArgument, ""},
	{errs.ErrSeekNotAllowed, codes.FailedPrecondition, ""},
	{errs.ErrAdminDisabled, codes.FailedPrecondition, ""},
	{errs.ErrAdminBound, codes.InvalidArgument, ""},
	{errs.ErrConsumerConfigured, codes.FailedPrecondition, ""},
	{errs.ErrConsumerNotCreatedByAPI, codes.FailedPrecondition, ""},
	{errs.ErrConsumerExists, codes.AlreadyExists, ""},
	{errs.ErrConsumerQuota, codes.ResourceExhausted, ""},
	{errs.ErrConsumerBusy, codes.Unavailable, ""},
	{context.DeadlineExceeded, codes.DeadlineExceeded, errs.TextDeadline},
	{context.Canceled, codes.Canceled, errs.TextCanceled},
}

var internal = kind{nil, codes.Internal, errs.TextInternal}

func kindOf(err error) kind {
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k
		}
	}
	return internal
}

func (k kind) text(err error) string {
	if k.message != "" && !errors.Is(err, errs.CallerSilent) { // a silence's text is the caller's
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
	if d, derr := st.WithDetails(&errdetails.ErrorInfo{Reason: errs.Reason(err), Domain: errorDomain}); derr == nil {
		st = d
	}
	return st.Err()
}

// failureOf is how a per-token error is reported.
func failureOf(err error) (codes.Code, string, string) {
	k := kindOf(err)
	return k.code, errs.Reason(err), k.text(err)
}

// edge is where domain errors become gRPC statuses. An error whose text is
// not shown to the caller is logged here, once.
type edge struct{ log *slog.Logger }

func (e edge) status(err error) error {
	st := toStatus(err)
	if k := kindOf(err); k.message != "" && k.code != codes.Canceled && k.code != codes.DeadlineExceeded &&
		k.code != codes.InvalidArgument && k.code != codes.FailedPrecondition {
		e.log.Warn("request failed", "code", k.code, "err", err)
	}
	return st
}
