package consumer

import (
	"path"
	"time"
)

// The gateway's request bounds, where the configuration leaves them unset:
// the configuration (internal/config) and the replica (internal/core) both
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
