package auth_test

import (
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/auth"
	"github.com/jetgate/jetgate/internal/authtest"
)

// A JWT signed with a key of the JWKS, for the right audience, is refused
// when another issuer made it: the JWKS may hold the keys of more than one
// issuer, and only the configured one speaks for jetgate's callers.
func TestJWTFromAnotherIssuerIsRefused(t *testing.T) {
	good := authtest.NewIssuer(t, "https://idp.example", "k1")
	other := *good // the same key, under another name
	other.Name = "https://other-idp.example"
	a := newAuth(t, auth.Config{JWT: &auth.JWT{JWKSFile: authtest.WriteJWKS(t, good), Issuer: "https://idp.example", Audience: "jetgate"}})

	if p, err := a.Authenticate(good.Token("alice", "jetgate", time.Hour), nil); err != nil || p != "alice" {
		t.Fatalf("the configured issuer's JWT: %q, %v; want alice", p, err)
	}
	for _, iss := range []string{"https://other-idp.example", "https://idp.example/", "", "https://IDP.example"} {
		other.Name = iss
		p, err := a.Authenticate(other.Token("alice", "jetgate", time.Hour), nil)
		if !errors.Is(err, auth.ErrUnauthenticated) {
			t.Errorf("a JWT with the right key and audience from issuer %q: %q, %v; want ErrUnauthenticated", iss, p, err)
		}
	}
}

// An API key is compared with every configured key, in constant time,
// whichever matches (the first, one in the middle, the last, or none): no
// early return on a match, so the time taken says nothing of which key it
// is or where it stands.
func TestAPIKeyIsComparedWithEveryConfiguredKey(t *testing.T) {
	const n = 5
	var keys []auth.APIKey
	for i := range n {
		keys = append(keys, auth.APIKey{Principal: fmt.Sprintf("svc-%d", i), SHA256: authtest.KeyHash(fmt.Sprintf("key-%d", i))})
	}
	a := newAuth(t, auth.Config{APIKeys: keys})
	if !auth.ComparesInConstantTime(a) {
		t.Fatal("API keys are not compared with subtle.ConstantTimeCompare")
	}
	var compared []string // the configured hashes compared, in order
	auth.SetCompare(a, func(x, y []byte) int {
		compared = append(compared, hex.EncodeToString(y))
		return subtle.ConstantTimeCompare(x, y)
	})
	for _, tt := range []struct{ bearer, want string }{
		{"key-0", "svc-0"},
		{"key-2", "svc-2"},
		{fmt.Sprintf("key-%d", n-1), fmt.Sprintf("svc-%d", n-1)},
		{"no-such-key", ""},
	} {
		compared = nil
		p, err := a.Authenticate(tt.bearer, nil)
		if tt.want == "" && !errors.Is(err, auth.ErrUnauthenticated) || tt.want != "" && (err != nil || p != tt.want) {
			t.Fatalf("Authenticate(%q) = %q, %v; want %q", tt.bearer, p, err, tt.want)
		}
		if len(compared) != n {
			t.Fatalf("Authenticate(%q) compared %d of the %d configured keys", tt.bearer, len(compared), n)
		}
		for i, k := range keys {
			if compared[i] != k.SHA256 {
				t.Fatalf("Authenticate(%q): comparison %d was with %s, want configured key %d (%s)", tt.bearer, i, compared[i], i, k.SHA256)
			}
		}
	}
}
