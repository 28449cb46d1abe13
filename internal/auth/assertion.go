package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
)

// Assertion lets the REST side, which authenticates an HTTP request itself,
// tell the gRPC chain who the caller is. It is signed with a key that lives
// and dies with the process, so no caller can make one: a request that
// carries a bad one is refused.
type Assertion struct{ key []byte }

// Metadata keys of an assertion. The principal's is a binary one (-bin): a
// principal (an API key's name, a JWT's subject) may be any text, and gRPC
// metadata of other keys takes printable ASCII only.
const (
	AssertedPrincipal = "jetgate-internal-principal-bin"
	AssertionProof    = "jetgate-internal-proof"
)

// NewAssertion makes a signer with a fresh random key.
func NewAssertion() *Assertion {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return &Assertion{key: k}
}

// Sign is the proof that accompanies principal.
func (s *Assertion) Sign(principal string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(principal))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Verify reports whether proof is Sign's for principal.
func (s *Assertion) Verify(principal, proof string) bool {
	got, err := base64.RawURLEncoding.DecodeString(proof)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(principal))
	return hmac.Equal(got, m.Sum(nil))
}
