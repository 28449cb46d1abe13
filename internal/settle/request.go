package settle

import (
	"fmt"
	"time"

	"github.com/jetgate/jetgate/internal/auth"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natsname"
)

// Bounds of a settle, the same for API requests and forwards.
const (
	MaxTokens    = 1000
	MaxReasonLen = 1024              // a Term's reason
	maxPrincipal = auth.MaxPrincipal // the caller's, refused longer at the door
)

// Request is one settle of a batch of tokens, as a caller asks it through
// the API and as one replica forwards it to another.
type Request struct {
	Op        lease.Op      `json:"op"`
	Stream    string        `json:"stream"`
	Consumer  string        `json:"consumer"`
	Tokens    []string      `json:"tokens"`
	Delay     time.Duration `json:"delay,omitempty"`     // Nak
	Reason    string        `json:"reason,omitempty"`    // Term
	Principal string        `json:"principal,omitempty"` // the caller
	// Duration is an Extend's: how long the leases are to last from now
	// (Args.Duration).
	Duration *time.Duration `json:"duration,omitempty"`
}

// Args are the request's settle arguments.
func (r Request) Args() Args {
	return Args{Delay: r.Delay, Reason: r.Reason, Principal: r.Principal, Duration: r.Duration}
}

// Validate is the one check of a settle request, for API requests and
// forwards alike.
func (r Request) Validate() error {
	for _, n := range [...]struct{ field, v string }{{"stream", r.Stream}, {"consumer", r.Consumer}} {
		if err := natsname.Check(n.field, n.v); err != nil {
			return fmt.Errorf("%w: %w", errs.ErrInvalidArgument, err)
		}
	}
	switch {
	case r.Op < lease.OpAck || r.Op > lease.OpExtend:
		return fmt.Errorf("%w: unknown settle op %d", errs.ErrInvalidArgument, r.Op)
	case len(r.Tokens) == 0:
		return fmt.Errorf("%w: tokens: give at least one token", errs.ErrInvalidArgument)
	case len(r.Tokens) > MaxTokens:
		return fmt.Errorf("%w: tokens: %d given; at most %d per request", errs.ErrInvalidArgument, len(r.Tokens), MaxTokens)
	case r.Delay < 0:
		return fmt.Errorf("%w: delay must not be negative", errs.ErrInvalidArgument)
	case r.Delay > 0 && r.Op != lease.OpNak:
		return fmt.Errorf("%w: a delay goes only with a Nak", errs.ErrInvalidArgument)
	case len(r.Reason) > MaxReasonLen:
		return fmt.Errorf("%w: reason is %d bytes; at most %d are allowed", errs.ErrInvalidArgument, len(r.Reason), MaxReasonLen)
	case r.Duration != nil && *r.Duration < 0:
		return fmt.Errorf("%w: duration must not be negative: 0s gives the message back now", errs.ErrInvalidArgument)
	case r.Duration != nil && r.Op != lease.OpExtend:
		return fmt.Errorf("%w: a duration goes only with an Extend", errs.ErrInvalidArgument)
	case r.Reason != "" && r.Op != lease.OpTerm:
		return fmt.Errorf("%w: a reason goes only with a Term", errs.ErrInvalidArgument)
	case len(r.Principal) > maxPrincipal:
		return fmt.Errorf("%w: principal too long", errs.ErrInvalidArgument)
	}
	return nil
}
