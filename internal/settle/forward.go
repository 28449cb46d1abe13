package settle

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/pull"
	"github.com/jetgate/jetgate/internal/token"
)

// forwardWindow is how far a forward's timestamp may be from the receiver's
// clock: a captured forward cannot be replayed later.
const forwardWindow = 2 * time.Minute

// ErrIssuerGone is a forward no replica took: the issuer crashed,
// restarted or is shutting down, and the tokens must be acted on without
// it.
var ErrIssuerGone = errs.ErrIssuerGone

// errForgedForward is a forward or reply that does not verify.
var errForgedForward = errors.New("forward not signed with a key of this deployment")

// sigHeader carries the signature of a forward or of its reply: the shared
// token key authenticates both, so that a NATS client that is not a replica
// can neither forge a settle nor answer one.
const sigHeader = "Jetgate-Sig"

// Subject is where the replica with the given id takes forwarded settles.
func Subject(id token.IssuerID) string { return "_JETGATE.SETTLE." + id.String() }

// Forward is what one replica asks of the issuer of some leases: a settle
// request, made one of a kind by Sent (unix ms) and Nonce: the reply is
// bound to the nonce, and an old forward is refused.
type Forward struct {
	Request
	Sent  int64  `json:"sent_ms"`
	Nonce string `json:"nonce"`
}

type reply struct {
	Outcomes []wireOutcome `json:"outcomes"`
}

type wireOutcome struct {
	Reason   string `json:"reason,omitempty"` // "" is success
	NewToken string `json:"new_token,omitempty"`
	Deadline int64  `json:"deadline_ms,omitempty"`
}

// SendForward asks issuer to settle f and returns its outcomes, one per
// token. The forward is signed with keys; a reply that does not verify is
// ignored. It fails with ErrIssuerGone when nothing takes the forward, with
// errs.ErrIssuerUnavailable when the issuer does not answer in time, and
// otherwise with an errs.ErrUnavailable error.
func (s *Sender) SendForward(ctx context.Context, keys *token.Keyring, issuer token.IssuerID, f Forward) ([]Outcome, error) {
	var nonce [12]byte
	_, _ = rand.Read(nonce[:])
	f.Nonce = base64.RawURLEncoding.EncodeToString(nonce[:])
	f.Sent = time.Now().UnixMilli()
	body, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	subj := Subject(issuer)
	replies := make(chan *nats.Msg, 4)
	rsubj, id := s.open(func(m *nats.Msg) {
		select {
		case replies <- m:
		default:
		}
	})
	defer s.close(id)
	if !s.nc.IsConnected() {
		return nil, fmt.Errorf("%w: not connected", errs.ErrUnavailable)
	}
	m := &nats.Msg{Subject: subj, Reply: rsubj, Data: body, Header: nats.Header{}}
	m.Header.Set(sigHeader, keys.Sign([]byte(subj), body))
	if err := s.nc.PublishMsg(m); err != nil {
		return nil, fmt.Errorf("%w: forward to issuer %s: %v", errs.ErrUnavailable, issuer, err)
	}
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	for {
		select {
		case r := <-replies:
			if errors.Is(pull.ReplyStatus(r), nats.ErrNoResponders) {
				return nil, ErrIssuerGone
			}
			if out, ok := decodeReply(keys, f, r); ok {
				if len(out) > 0 && errors.Is(out[0].Err, ErrIssuerGone) {
					return nil, ErrIssuerGone // it is shutting down
				}
				return out, nil
			}
		case <-timer.C:
			return nil, fmt.Errorf("%w: forward to issuer %s: no verified answer in %v", errs.ErrIssuerUnavailable, issuer, s.timeout)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func decodeReply(keys *token.Keyring, f Forward, m *nats.Msg) ([]Outcome, bool) {
	if !keys.Verify(m.Header.Get(sigHeader), []byte("reply"), []byte(f.Nonce), m.Data) {
		return nil, false
	}
	var rep reply
	if err := json.Unmarshal(m.Data, &rep); err != nil || len(rep.Outcomes) != len(f.Tokens) {
		return nil, false
	}
	out := make([]Outcome, len(rep.Outcomes))
	for i, w := range rep.Outcomes {
		out[i].Err = errs.FromReason(w.Reason)
		out[i].NewToken = w.NewToken
		if w.Deadline != 0 {
			out[i].Deadline = time.UnixMilli(w.Deadline)
		}
	}
	return out, true
}

// DecodeForward reads a forwarded settle: it must be signed with a key of
// keys for the subject it came on, recent, and valid as an API request.
func DecodeForward(keys *token.Keyring, m *nats.Msg, now time.Time) (Forward, error) {
	var f Forward
	if !keys.Verify(m.Header.Get(sigHeader), []byte(m.Subject), m.Data) {
		return f, errForgedForward
	}
	if err := json.Unmarshal(m.Data, &f); err != nil {
		return f, fmt.Errorf("%w: forward: %v", errs.ErrInvalidArgument, err)
	}
	if sent := time.UnixMilli(f.Sent); sent.Before(now.Add(-forwardWindow)) || sent.After(now.Add(forwardWindow)) {
		return f, fmt.Errorf("%w: forward sent at %v, outside the window of %v", errs.ErrInvalidArgument, sent, forwardWindow)
	}
	return f, f.Validate()
}

// Reply answers a forward with its outcomes, signed and bound to it.
func Reply(keys *token.Keyring, m *nats.Msg, f Forward, out []Outcome) error {
	rep := reply{Outcomes: make([]wireOutcome, len(out))}
	for i, o := range out {
		w := &rep.Outcomes[i]
		w.Reason = errs.Reason(o.Err)
		w.NewToken = o.NewToken
		if !o.Deadline.IsZero() {
			w.Deadline = o.Deadline.UnixMilli()
		}
	}
	body, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	r := &nats.Msg{Subject: m.Reply, Data: body, Header: nats.Header{}}
	r.Header.Set(sigHeader, keys.Sign([]byte("reply"), []byte(f.Nonce), body))
	return m.RespondMsg(r)
}
