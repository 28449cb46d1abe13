package replica

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
)

// publishWaits are the publishes waiting for their acks, by subject. The
// server answers no request to a subject jetgate's own NATS user may not
// publish to: it tells the connection an -ERR that names the subject, not
// the request. AsyncError hands it here, and every publish waiting on that
// subject ends at once rather than after the request timeout.
type publishWaits struct {
	mu sync.Mutex
	m  map[string]map[*publishWait]struct{}
}

// publishWait is one publish waiting, ended with its refusal as the cause.
type publishWait struct{ cancel context.CancelCauseFunc }

// wait returns ctx, ended with a deniedError as its cause when the
// server refuses one of subjects, and the func that stops the wait.
func (w *publishWaits) wait(ctx context.Context, subjects ...string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	pw := &publishWait{cancel: cancel}
	w.mu.Lock()
	if w.m == nil {
		w.m = make(map[string]map[*publishWait]struct{})
	}
	for _, s := range subjects {
		if w.m[s] == nil {
			w.m[s] = make(map[*publishWait]struct{})
		}
		w.m[s][pw] = struct{}{}
	}
	w.mu.Unlock()
	return ctx, func() {
		w.mu.Lock()
		for _, s := range subjects {
			delete(w.m[s], pw)
			if len(w.m[s]) == 0 {
				delete(w.m, s)
			}
		}
		w.mu.Unlock()
		cancel(nil)
	}
}

// refuse ends the publishes waiting on subject.
func (w *publishWaits) refuse(subject string) {
	err := &deniedError{subject: subject}
	w.mu.Lock()
	defer w.mu.Unlock()
	for pw := range w.m[subject] {
		pw.cancel(err)
	}
}

// republish is a Redrive's PublishMsg (deadletter.Publish), ended at once
// with the refusal when the server refuses jetgate's NATS user m's
// subject, as a Publish is.
func (pb *publisher) republish(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	pctx, done := pb.waits.wait(ctx, m.Subject)
	defer done()
	ack, err := pb.js.PublishMsg(pctx, m, opts...)
	if err != nil {
		if derr := pb.denied(m.Subject, refusal(pctx, err)); derr != nil {
			return nil, derr
		}
	}
	return ack, err
}

// AsyncError takes an error NATS reported to the connection's error handler
// (nats.ErrorHandler), not to a request: a permissions violation for a
// publish ends the publishes waiting on its subject with PUBLISH_REFUSED.
// Other errors are not the replica's.
func (pb *publisher) AsyncError(err error) {
	if subject, ok := publishViolation(err); ok {
		pb.waits.refuse(subject)
	}
}

// publishViolation is the subject of the server's "Permissions Violation
// for Publish to <quoted subject>" (nats-server's pubPermissionViolation).
func publishViolation(err error) (string, bool) {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return "", false
	}
	_, quoted, ok := strings.Cut(err.Error(), "Permissions Violation for Publish to ")
	if !ok {
		return "", false
	}
	subject, uerr := strconv.Unquote(quoted)
	return subject, uerr == nil
}

// refusal is the cause a wait of ctx ended with, when the server refused
// its subject; else err.
func refusal(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, errs.ErrPublishRefused) {
		return cause
	}
	return err
}

// deniedError is the refusal of a publish to subject for the permissions
// of jetgate's own NATS user: trying again never helps.
type deniedError struct{ subject string }

func (e *deniedError) Error() string {
	return fmt.Sprintf("%v: this gateway's NATS user may not publish to %q; an operator must allow the stream's subjects in the NATS server's permissions",
		errs.ErrPublishRefused, e.subject)
}

func (e *deniedError) Unwrap() error { return errs.ErrPublishRefused }

// denied is the refusal of a publish to subject for the permissions of
// jetgate's own NATS user: err when it is that refusal (a wait AsyncError
// ended), or the connection's last error when that is the server's refusal
// of subject (a publish that waited out its timeout, its refusal told to no
// AsyncError); nil if neither.
func (pb *publisher) denied(subject string, err error) error {
	if d := (*deniedError)(nil); errors.As(err, &d) {
		if d.subject != subject {
			return nil
		}
		return err
	}
	if s, ok := publishViolation(pb.nc.LastError()); ok && s == subject {
		return &deniedError{subject: subject}
	}
	return nil
}
