package errs

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strings"
	"testing"
)

// sentinels are the errors Reason names, by their Go names.
var sentinels = map[string]error{
	"ErrInvalidArgument":              ErrInvalidArgument,
	"ErrUnauthenticated":              ErrUnauthenticated,
	"ErrPermissionDenied":             ErrPermissionDenied,
	"ErrConsumerNotFound":             ErrConsumerNotFound,
	"ErrStreamNotFound":               ErrStreamNotFound,
	"ErrUnavailable":                  ErrUnavailable,
	"ErrStopping":                     ErrStopping,
	"ErrIssuerUnavailable":            ErrIssuerUnavailable,
	"ErrTokenInvalid":                 ErrTokenInvalid,
	"ErrTokenUnknownKey":              ErrTokenUnknownKey,
	"ErrTokenWrongConsumer":           ErrTokenWrongConsumer,
	"ErrTokenWrongPrincipal":          ErrTokenWrongPrincipal,
	"ErrLeaseExpired":                 ErrLeaseExpired,
	"ErrLeaseSettled":                 ErrLeaseSettled,
	"ErrSettleInProgress":             ErrSettleInProgress,
	"ErrIssuerGone":                   ErrIssuerGone,
	"ErrSubjectNotAllowed":            ErrSubjectNotAllowed,
	"ErrHeaderReserved":               ErrHeaderReserved,
	"ErrHeaderInvalid":                ErrHeaderInvalid,
	"ErrSubjectTooLong":               ErrSubjectTooLong,
	"ErrPayloadTooLarge":              ErrPayloadTooLarge,
	"ErrHeadersTooLarge":              ErrHeadersTooLarge,
	"ErrMessageTooLarge":              ErrMessageTooLarge,
	"ErrNoDeadLetter":                 ErrNoDeadLetter,
	"ErrDeadLetterNotFound":           ErrDeadLetterNotFound,
	"ErrDeadLetterStreamNotFound":     ErrDeadLetterStreamNotFound,
	"ErrDeadLetterStreamDeniesDelete": ErrDeadLetterStreamDeniesDelete,
	"ErrPullRefused":                  ErrPullRefused,
	"ErrPublishRefused":               ErrPublishRefused,
	"ErrPriorityGroupRequired":        ErrPriorityGroupRequired,
	"ErrManageRefused":                ErrManageRefused,
	"ErrTTLNotAllowed":                ErrTTLNotAllowed,
	"ErrBatchNotAllowed":              ErrBatchNotAllowed,
	"ErrPinIDMismatch":                ErrPinIDMismatch,
	"ErrSeekUnsupported":              ErrSeekUnsupported,
	"ErrSeekTimeInFuture":             ErrSeekTimeInFuture,
	"ErrSeekBelowStart":               ErrSeekBelowStart,
	"ErrSeekNotAllowed":               ErrSeekNotAllowed,
	"ErrAdminDisabled":                ErrAdminDisabled,
	"ErrAdminBound":                   ErrAdminBound,
	"ErrConsumerConfigured":           ErrConsumerConfigured,
	"ErrConsumerNotCreatedByAPI":      ErrConsumerNotCreatedByAPI,
	"ErrConsumerExists":               ErrConsumerExists,
	"ErrConsumerQuota":                ErrConsumerQuota,
	"ErrConsumerBusy":                 ErrConsumerBusy,
	"DeadlineExceeded":                context.DeadlineExceeded,
	"Canceled":                        context.Canceled,
}

// Every exported error variable of errors.go is in sentinels, so that a new
// one cannot go without a reason unnoticed.
func TestEverySentinelIsListed(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			for _, name := range s.(*ast.ValueSpec).Names {
				if name.IsExported() && strings.HasPrefix(name.Name, "Err") {
					n++
					if _, ok := sentinels[name.Name]; !ok {
						t.Errorf("%s is not in this test's sentinels: give it a reason and list it", name.Name)
					}
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("found no error variables in errors.go")
	}
}

var upperSnake = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$`)

func TestEverySentinelHasItsOwnReason(t *testing.T) {
	owner := map[string]string{}
	for name, err := range sentinels {
		r := Reason(err)
		if r == "" || r == ReasonInternal {
			t.Errorf("Reason(%s) = %q, want a reason of its own", name, r)
			continue
		}
		if !upperSnake.MatchString(r) {
			t.Errorf("Reason(%s) = %q, want UPPER_SNAKE", name, r)
		}
		if other, ok := owner[r]; ok {
			t.Errorf("%s and %s share the reason %s", name, other, r)
		}
		owner[r] = name
	}
}

func TestReasonRoundTrip(t *testing.T) {
	for name, err := range sentinels {
		wrapped := fmt.Errorf("ack ORDERS: %w", err)
		r := Reason(wrapped)
		if r != Reason(err) {
			t.Errorf("Reason(wrapped %s) = %q, want %q", name, r, Reason(err))
		}
		back := FromReason(r)
		if back != err {
			t.Errorf("FromReason(%q) = %v, want %s itself", r, back, name)
		}
		if !errors.Is(back, err) {
			t.Errorf("FromReason(%q) = %v does not match %s", r, back, name)
		}
		if Reason(back) != r {
			t.Errorf("Reason(FromReason(%q)) = %q", r, Reason(back))
		}
	}
}

func TestReasonOfNil(t *testing.T) {
	if r := Reason(nil); r != "" {
		t.Errorf("Reason(nil) = %q, want \"\"", r)
	}
	if err := FromReason(""); err != nil {
		t.Errorf("FromReason(\"\") = %v, want nil", err)
	}
}

func TestUnknownReason(t *testing.T) {
	const reason = "SOMETHING_NEW"
	err := FromReason(reason)
	if err == nil {
		t.Fatal("FromReason of an unknown reason is nil: the failure would read as success")
	}
	for name, s := range sentinels {
		if errors.Is(err, s) {
			t.Errorf("FromReason(%q) = %v matches %s", reason, err, name)
		}
	}
	if r := Reason(err); r != ReasonInternal {
		t.Errorf("Reason(FromReason(%q)) = %q, want %s", reason, r, ReasonInternal)
	}
	if !strings.Contains(err.Error(), reason) {
		t.Errorf("FromReason(%q) = %q, want the reason in its text for the log", reason, err)
	}
}

func TestReasonOfAPlainErrorIsInternal(t *testing.T) {
	for _, err := range []error{
		errors.New("boom"),
		fmt.Errorf("wrapped: %w", errors.New("boom")),
		errors.New("nats unavailable"), // same text as ErrUnavailable, not the same error
	} {
		if r := Reason(err); r != ReasonInternal {
			t.Errorf("Reason(%v) = %q, want %s", err, r, ReasonInternal)
		}
	}
}
