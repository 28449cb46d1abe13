package settle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/token"
)

// ErrIssuerGone is a forward no replica answered: the issuer crashed or
// restarted, and the tokens must be acted on without it.
var ErrIssuerGone = errors.New("issuer gone")

// Subject is where the replica with the given id takes forwarded settles.
func Subject(id token.IssuerID) string { return "_JETGATE.SETTLE." + id.String() }

// Forward is what one replica asks of the issuer of some leases.
type Forward struct {
	Op        lease.Op      `json:"op"`
	Stream    string        `json:"stream"`
	Consumer  string        `json:"consumer"`
	Tokens    []string      `json:"tokens"`
	Delay     time.Duration `json:"delay,omitempty"`
	Reason    string        `json:"reason,omitempty"`
	Principal string        `json:"principal,omitempty"`
}

// Args are the forward's settle arguments.
func (f Forward) Args() Args { return Args{Delay: f.Delay, Reason: f.Reason, Principal: f.Principal} }

type reply struct {
	Outcomes []wireOutcome `json:"outcomes"`
}

type wireOutcome struct {
	Reason   string `json:"reason,omitempty"` // "" is success
	NewToken string `json:"new_token,omitempty"`
	Deadline int64  `json:"deadline_ms,omitempty"`
}

// SendForward asks issuer to settle f and returns its outcomes, one per
// token. It fails with ErrIssuerGone when nothing answers, and otherwise
// with an errs.ErrUnavailable error.
func (s *Sender) SendForward(ctx context.Context, issuer token.IssuerID, f Forward) ([]Outcome, error) {
	body, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	fctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	m, err := s.nc.RequestWithContext(fctx, Subject(issuer), body)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, ErrIssuerGone
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, fmt.Errorf("%w: forward to issuer %s: %v", errs.ErrUnavailable, issuer, err)
	}
	var rep reply
	if err := json.Unmarshal(m.Data, &rep); err != nil || len(rep.Outcomes) != len(f.Tokens) {
		return nil, fmt.Errorf("%w: malformed reply from issuer %s", errs.ErrUnavailable, issuer)
	}
	out := make([]Outcome, len(rep.Outcomes))
	for i, w := range rep.Outcomes {
		out[i].Err = errs.FromReason(w.Reason)
		out[i].NewToken = w.NewToken
		if w.Deadline != 0 {
			out[i].Deadline = time.UnixMilli(w.Deadline)
		}
	}
	return out, nil
}

// DecodeForward reads a forwarded settle.
func DecodeForward(data []byte) (Forward, error) {
	var f Forward
	err := json.Unmarshal(data, &f)
	return f, err
}

// EncodeReply is the answer to a forward.
func EncodeReply(out []Outcome) ([]byte, error) {
	rep := reply{Outcomes: make([]wireOutcome, len(out))}
	for i, o := range out {
		w := &rep.Outcomes[i]
		w.Reason = errs.Reason(o.Err)
		w.NewToken = o.NewToken
		if !o.Deadline.IsZero() {
			w.Deadline = o.Deadline.UnixMilli()
		}
	}
	return json.Marshal(rep)
}
