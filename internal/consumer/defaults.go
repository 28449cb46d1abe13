package consumer

import (
	"path"
	"time"
)

// The gateway's request bounds, where the configuration leaves them unset:
// the configuration (internal/config) and the replica (internal/replica) both
// read them here.
const (
	DefaultRequestTimeout = 5 * time.Second
	DefaultMaxBatch       = 1000
	DefaultMaxExpires     = 30 * time.Second
	// DefaultMaxNakDelay bounds a Nak's delay: a message nak'ed for longer
	// holds one of max_ack_pending's places all that time.
	DefaultMaxNakDelay = 24 * time.Hour
	DefaultExpires     = 5 * time.Second
	// DefaultMaxBodyBytes bounds a REST body and a gRPC request: 1000
	// tokens of 256 characters fit with room to spare, and so does a modest
	// Publish.
	DefaultMaxBodyBytes = 4 << 20
	// MinAckWait is the least ack_wait, or backoff step, of a consumer
	// jetgate creates: under a shorter one the server rescans its pending
	// messages for redelivery all but without rest.
	MinAckWait = time.Second
)

// OnDemand serves durable consumers that exist on the server but not in the
// configuration: bound on their first call, never created, updated or
// deleted by jetgate, and unbound after IdleUnbind without a call.
type OnDemand struct {
	Match      []Match // none: no consumer on demand
	IdleUnbind time.Duration
}

// Match names consumers by glob patterns (path.Match) of stream and name.
type Match struct{ Stream, Consumer string }

// DefaultIdleUnbind is how long an on-demand consumer nobody calls stays
// bound.
const DefaultIdleUnbind = 10 * time.Minute

// Matches reports whether stream/name is one of the consumers served on demand.
func (o OnDemand) Matches(stream, name string) bool {
	for _, m := range o.Match {
		okS, _ := path.Match(m.Stream, stream)
		okC, _ := path.Match(m.Consumer, name)
		if okS && okC {
			return true
		}
	}
	return false
}

// StreamMatches reports whether the consumers of stream may be served on
// demand: whether a pattern names it.
func (o OnDemand) StreamMatches(stream string) bool {
	for _, m := range o.Match {
		if ok, _ := path.Match(m.Stream, stream); ok {
			return true
		}
	}
	return false
}

// Admin bounds the consumers callers create, update and delete through the
// API (DESIGN section 18): on which streams and under which names, and the
// most they may ask of the server. A zero maximum is no bound.
type Admin struct {
	Streams, Consumers []string // glob patterns (path.Match); a consumer matches one of each
	MaxAckWait         time.Duration
	MaxDeliver         int
	MaxAckPending      int
	MaxWaiting         int
	// MaxPerPrincipal is how many consumers one principal may have created
	// (and not deleted) across the streams.
	MaxPerPrincipal int
	// InactiveThreshold is set on the consumers created through the API
	// (a shorter one a caller asks for is kept): the server deletes one
	// nobody pulls from for that long.
	InactiveThreshold time.Duration
}

// Matches reports whether stream/name is a consumer the API may create or
// change.
func (a *Admin) Matches(stream, name string) bool {
	return a != nil && matchAny(a.Streams, stream) && matchAny(a.Consumers, name)
}

// StreamAllowed reports whether the API may create consumers on stream.
func (a *Admin) StreamAllowed(stream string) bool {
	return a != nil && matchAny(a.Streams, stream)
}

func matchAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, s); ok {
			return true
		}
	}
	return false
}

// CreatedBy is the metadata key that names the principal that created a
// consumer through the API; a consumer without it was made otherwise.
const CreatedBy = "jetgate.created_by"

// CreateID is the metadata key of a nonce of the create that made a
// consumer through the API: the server takes a create of a consumer that
// exists with the same configuration as done, and two identical creates at
// once would both be answered as made.
const CreateID = "jetgate.create_id"
