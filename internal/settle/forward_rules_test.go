package settle_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// forwardMsg is f as it reaches subject, with the signature sign makes of
// subject and body in its header ("" for none).
func forwardMsg(t *testing.T, subject string, f settle.Forward, sign func(subject string, body []byte) string) *nats.Msg {
	t.Helper()
	body, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	m := &nats.Msg{Subject: subject, Data: body, Header: nats.Header{}}
	if sig := sign(subject, body); sig != "" {
		m.Header.Set("Jetgate-Sig", sig)
	}
	return m
}

// A forward is believed only when its signature is a key of this
// deployment's over the subject it came on and its very body: a signature
// header that is merely there proves nothing. A forward that does not
// verify is refused as forged, not as a bad request, because a forged
// forward is not answered.
func TestDecodeForwardRefusesAWrongSignature(t *testing.T) {
	keys := token.RandomKeyring()
	now := time.Now()
	subject := settle.Subject(token.NewIssuerID())
	f := settle.Forward{Request: settle.Request{Op: lease.OpAck, Stream: "ORDERS", Consumer: "billing", Tokens: []string{"t1"}}, Sent: now.UnixMilli(), Nonce: "n1"}
	good := keys.Sign([]byte(subject), mustJSON(t, f))
	kid, _, _ := strings.Cut(good, ".")

	if _, err := settle.DecodeForward(keys, forwardMsg(t, subject, f, func(string, []byte) string { return good }), now); err != nil {
		t.Fatalf("a forward signed with the deployment's key: %v", err)
	}
	for name, sign := range map[string]func(string, []byte) string{
		"no signature":                 func(string, []byte) string { return "" },
		"garbage":                      func(string, []byte) string { return "not-a-signature" },
		"garbage MAC under our key id": func(string, []byte) string { return kid + ".AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" },
		"tampered":                     func(string, []byte) string { return tamper(good) },
		"another deployment's key":     func(s string, b []byte) string { return token.RandomKeyring().Sign([]byte(s), b) },
		"signed for another replica":   func(_ string, b []byte) string { return keys.Sign([]byte(settle.Subject(token.NewIssuerID())), b) },
		"signed over another body":     func(s string, _ []byte) string { return keys.Sign([]byte(s), []byte(`{"op":1}`)) },
	} {
		t.Run(name, func(t *testing.T) {
			got, err := settle.DecodeForward(keys, forwardMsg(t, subject, f, sign), now)
			if err == nil {
				t.Fatalf("a forward with a wrong signature was accepted: %+v", got)
			}
			if errors.Is(err, errs.ErrInvalidArgument) {
				t.Fatalf("a forward with a wrong signature was refused as a bad request (%v), which is answered: want it refused as forged", err)
			}
		})
	}
}

// A correctly signed forward is accepted only within the window around the
// receiver's clock: one captured and replayed later, or dated ahead, is
// refused as a bad request.
func TestDecodeForwardRefusesAForwardOutsideTheWindow(t *testing.T) {
	keys := token.RandomKeyring()
	now := time.Now()
	subject := settle.Subject(token.NewIssuerID())
	sign := func(s string, b []byte) string { return keys.Sign([]byte(s), b) }
	for _, tt := range []struct {
		name string
		sent time.Time
		ok   bool
	}{
		{"now", now, true},
		{"just inside, old", now.Add(-settle.ForwardWindow + time.Second), true},
		{"just inside, ahead", now.Add(settle.ForwardWindow - time.Second), true},
		{"just too old", now.Add(-settle.ForwardWindow - time.Second), false},
		{"an hour old", now.Add(-time.Hour), false},
		{"too far ahead", now.Add(settle.ForwardWindow + time.Second), false},
		{"no time", time.UnixMilli(0), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := settle.Forward{Request: settle.Request{Op: lease.OpAck, Stream: "ORDERS", Consumer: "billing", Tokens: []string{"t1"}}, Sent: tt.sent.UnixMilli(), Nonce: "n1"}
			_, err := settle.DecodeForward(keys, forwardMsg(t, subject, f, sign), now)
			switch {
			case tt.ok && err != nil:
				t.Fatalf("a forward sent %v before the receiver's clock: %v", now.Sub(tt.sent), err)
			case !tt.ok && !errors.Is(err, errs.ErrInvalidArgument):
				t.Fatalf("a signed forward sent %v before the receiver's clock: %v; want it refused, %v", now.Sub(tt.sent), err, errs.ErrInvalidArgument)
			}
		})
	}
}

// tamper changes the first character of sig's MAC.
func tamper(sig string) string {
	i := strings.IndexByte(sig, '.') + 1
	c := byte('A')
	if sig[i] == 'A' {
		c = 'B'
	}
	return sig[:i] + string(c) + sig[i+1:]
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
