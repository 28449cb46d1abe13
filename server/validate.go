package server

import (
	"fmt"
	"slices"
	"strings"
	"time"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natsname"
	"github.com/jetgate/jetgate/internal/pull"
	"github.com/jetgate/jetgate/internal/settle"
)

func validateNames(stream, consumer string) error {
	for _, f := range [...]struct{ field, v string }{{"stream", stream}, {"consumer", consumer}} {
		if err := natsname.Check(f.field, f.v); err != nil {
			return fmt.Errorf("%w: %w", errs.ErrInvalidArgument, err)
		}
	}
	return nil
}

// validateFetch checks a Fetch and applies its defaults.
func validateFetch(req *jetgatev1.FetchRequest, lim Limits) (consumer.FetchRequest, error) {
	if err := validateNames(req.GetStream(), req.GetConsumer()); err != nil {
		return consumer.FetchRequest{}, err
	}
	pri, err := validatePriority(req)
	if err != nil {
		return consumer.FetchRequest{}, err
	}
	fr := consumer.FetchRequest{Batch: int(req.GetBatch()), Expires: consumer.DefaultExpires, Priority: pri}
	switch {
	case fr.Batch < 0:
		return consumer.FetchRequest{}, fmt.Errorf("%w: batch must not be negative", errs.ErrInvalidArgument)
	case fr.Batch == 0:
		fr.Batch = 1
	case fr.Batch > lim.MaxBatch:
		return consumer.FetchRequest{}, fmt.Errorf("%w: batch %d is above the maximum of %d (the gateway's limits.max_batch, --max-batch)", errs.ErrInvalidArgument, fr.Batch, lim.MaxBatch)
	}
	if e := req.GetExpires(); e != nil {
		if err := e.CheckValid(); err != nil || e.AsDuration() < 0 {
			return consumer.FetchRequest{}, fmt.Errorf("%w: expires must be a duration of 0s or more", errs.ErrInvalidArgument)
		}
		fr.Expires = e.AsDuration()
	}
	fr.Expires = min(fr.Expires, lim.MaxExpires)
	if req.MaxBytes != nil {
		if req.GetMaxBytes() <= 0 {
			return consumer.FetchRequest{}, fmt.Errorf("%w: max_bytes must be positive when set", errs.ErrInvalidArgument)
		}
		fr.MaxBytes = req.GetMaxBytes()
	}
	return fr, nil
}

// settleRequest is what Ack, Nak, Term and Extend requests share.
type settleRequest interface {
	GetStream() string
	GetConsumer() string
	GetTokens() []string
}

// validateSettle turns an Ack, Nak, Term or Extend of principal into a
// settle request, checked by the rule that forwards are checked by too.
// priorityRequest is what Fetch and Consume requests ask of priority groups.
type priorityRequest interface {
	GetGroup() string
	GetMinPending() int64
	GetMinAckPending() int64
	GetPriority() int32
	GetPinId() string
}

// Bounds of priority fields: the server takes group names of at most 16
// characters of A-Z a-z 0-9 - _ / = (ADR-42), and priorities 0 to 9.
const (
	maxGroupLen = 16
	maxPinIDLen = 64
	maxPriority = 9
)

func validatePriority(req priorityRequest) (pull.Priority, error) {
	p := pull.Priority{Group: req.GetGroup(), MinPending: req.GetMinPending(), MinAckPending: req.GetMinAckPending(), PinID: req.GetPinId()}
	switch pr := req.GetPriority(); {
	case len(p.Group) > maxGroupLen || strings.ContainsFunc(p.Group, func(r rune) bool { return !isGroupRune(r) }):
		return p, fmt.Errorf("%w: group must be at most %d characters of A-Z, a-z, 0-9, -, _, / and =", errs.ErrInvalidArgument, maxGroupLen)
	case p.MinPending < 0 || p.MinAckPending < 0:
		return p, fmt.Errorf("%w: min_pending and min_ack_pending must not be negative", errs.ErrInvalidArgument)
	case pr < 0 || pr > maxPriority:
		return p, fmt.Errorf("%w: priority must be from 0 to %d", errs.ErrInvalidArgument, maxPriority)
	case len(p.PinID) > maxPinIDLen || !isASCIIPrintable(p.PinID):
		return p, fmt.Errorf("%w: pin_id is not a pin this gateway handed out", errs.ErrInvalidArgument)
	default:
		p.Priority = uint8(pr)
	}
	return p, nil
}

func isGroupRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_/=", r)
}

// validatePause checks a Pause: pause_until is required and in the future.
func validatePause(req *jetgatev1.PauseRequest, now time.Time) (time.Time, error) {
	if err := validateNames(req.GetStream(), req.GetConsumer()); err != nil {
		return time.Time{}, err
	}
	until := req.GetPauseUntil()
	if until == nil || until.CheckValid() != nil || !until.AsTime().After(now) {
		return time.Time{}, fmt.Errorf("%w: pause_until must be a time in the future (an RFC 3339 timestamp over REST)", errs.ErrInvalidArgument)
	}
	return until.AsTime(), nil
}

func validateSettle(req settleRequest, op lease.Op, principal string, lim Limits) (settle.Request, error) {
	sr := settle.Request{Op: op, Stream: req.GetStream(), Consumer: req.GetConsumer(), Tokens: req.GetTokens(), Principal: principal}
	switch r := req.(type) {
	case *jetgatev1.NakRequest:
		if d := r.GetDelay(); d != nil {
			if err := d.CheckValid(); err != nil {
				return settle.Request{}, fmt.Errorf("%w: delay must be a duration of 0s or more", errs.ErrInvalidArgument)
			}
			sr.Delay = d.AsDuration()
			if lim.MaxNakDelay > 0 && sr.Delay > lim.MaxNakDelay {
				return settle.Request{}, fmt.Errorf("%w: delay %v is longer than this gateway allows (limits.max_nak_delay: %v): a nak'ed message holds one of max_ack_pending's places while it waits",
					errs.ErrInvalidArgument, sr.Delay, lim.MaxNakDelay)
			}
		}
	case *jetgatev1.TermRequest:
		sr.Reason = r.GetReason()
	case *jetgatev1.ExtendRequest:
		if d := r.GetDuration(); d != nil {
			if err := d.CheckValid(); err != nil || d.AsDuration() < 0 {
				return settle.Request{}, fmt.Errorf("%w: duration must be a duration of 0s or more (0s gives the message back now)", errs.ErrInvalidArgument)
			}
			dur := d.AsDuration()
			if dur > 0 && dur < time.Millisecond {
				return settle.Request{}, fmt.Errorf("%w: duration %v is under 1ms, over before it is answered: ask 1ms or more, or 0s to give the message back now", errs.ErrInvalidArgument, dur)
			}
			if lim.MaxLease > 0 && dur > lim.MaxLease {
				return settle.Request{}, fmt.Errorf("%w: duration %v is longer than this gateway keeps a lease alive (limits.max_lease: %v)",
					errs.ErrInvalidArgument, dur, lim.MaxLease)
			}
			sr.Duration = &dur
		}
	}
	return sr, sr.Validate()
}

// maxRedriveSeqs bounds the sequences one Redrive names.
const maxRedriveSeqs = 1000

func validateRedrive(req *jetgatev1.RedriveRequest) error {
	if err := validateNames(req.GetStream(), req.GetConsumer()); err != nil {
		return err
	}
	if n := len(req.GetSeqs()); n > maxRedriveSeqs {
		return fmt.Errorf("%w: seqs: %d given; at most %d per request (none redrives all)", errs.ErrInvalidArgument, n, maxRedriveSeqs)
	}
	if slices.Contains(req.GetSeqs(), 0) {
		return fmt.Errorf("%w: seqs: 0 is not a stream sequence", errs.ErrInvalidArgument)
	}
	return nil
}

func isASCIIPrintable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
