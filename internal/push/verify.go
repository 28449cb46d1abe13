package push

import (
	"crypto/hmac"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// Tolerance is how far a request's Webhook-Timestamp may be from the
// receiver's clock, as the Standard Webhooks libraries allow.
const Tolerance = 5 * time.Minute

// Verifier checks the signature of a push, as a receiver does.
type Verifier struct{ key []byte }

// NewVerifier reads a signing secret file (whsec_<base64>).
func NewVerifier(file string) (*Verifier, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	key, err := signingKey(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, err
	}
	return &Verifier{key: key}, nil
}

// Verify checks that one of the request's signatures is body's under the
// secret, and that its timestamp is within Tolerance of now.
func (v *Verifier) Verify(h http.Header, body []byte, now time.Time) error {
	id, ts := h.Get("Webhook-Id"), h.Get("Webhook-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	switch {
	case id == "" || err != nil:
		return errors.New("no Webhook-Id or Webhook-Timestamp")
	case now.Sub(time.Unix(sec, 0)).Abs() > Tolerance:
		return errors.New("the timestamp is too far from now")
	}
	want := Sign(v.key, id, ts, body)
	for _, sig := range strings.Fields(h.Get("Webhook-Signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return errors.New("no signature matches")
}
