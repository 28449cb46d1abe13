// Package auth says who a caller is and what it may do: API keys (stored as
// their SHA-256, compared in constant time), JWT bearer tokens verified
// against a JWKS file, and client certificates (authn.go); grants per
// principal, stream, consumer and action (grants.go); and the assertion by
// which the REST side hands the principal it authenticated to the gRPC
// chain without a caller being able to forge it (assertion.go).
package auth

import (
	"context"
	"strings"
	"time"
)

// CredentialsHint is what a caller without good credentials is told, on
// gRPC and REST alike.
const CredentialsHint = "send valid credentials (Authorization: Bearer <API key or JWT>, or a client certificate where mTLS is on)"

// Bearer is the credential of an "Authorization: Bearer <x>" value, on gRPC
// (metadata authorization) and REST alike; "" when it is no bearer.
func Bearer(v string) string {
	if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		return strings.TrimSpace(v[7:])
	}
	return ""
}

// MaxPrincipal bounds a principal's name: every settle names its caller,
// also where one replica forwards it to another, and takes no longer one.
// A credential that names a longer one is refused at the door, rather than
// let its holder lease messages it could never settle.
const MaxPrincipal = 1024

// Action is what a grant allows.
type Action string

// The actions, and the RPCs each covers.
const (
	ActionFetch   Action = "fetch"   // Fetch, Consume
	ActionSettle  Action = "settle"  // Ack, Nak, Term, Extend
	ActionRead    Action = "read"    // GetConsumer
	ActionPublish Action = "publish" // Publish
	ActionRedrive Action = "redrive" // Redrive
	ActionManage  Action = "manage"  // Pause, Resume, Unpin
	ActionSeek    Action = "seek"    // Seek
	ActionAdmin   Action = "admin"   // CreateConsumer, UpdateConsumer, DeleteConsumer
	// ActionMetrics reads GET /metrics, which names every tenant's
	// consumers; its grant's stream and consumers are not read.
	ActionMetrics Action = "metrics"
)

// Actions lists every action, for validating configurations.
var Actions = []Action{ActionFetch, ActionSettle, ActionRead, ActionPublish, ActionRedrive, ActionManage, ActionSeek, ActionAdmin, ActionMetrics}

type principalKey struct{}

// WithPrincipal returns ctx carrying the authenticated principal.
func WithPrincipal(ctx context.Context, p string) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// Principal is the principal ctx carries: "" when authentication is off.
func Principal(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

type untilKey struct{}

// WithUntil returns ctx carrying when the caller's credential stops being
// taken (AuthenticateUntil); zero, never, is ctx itself (nothing to carry
// on every call of an API key).
func WithUntil(ctx context.Context, until time.Time) context.Context {
	if until.IsZero() {
		return ctx
	}
	return context.WithValue(ctx, untilKey{}, until)
}

// Until is when the credential of ctx's caller stops being taken: a stream
// it opened ends then. Zero: never.
func Until(ctx context.Context) time.Time {
	t, _ := ctx.Value(untilKey{}).(time.Time)
	return t
}
