// Package authtest makes credentials for tests: JWT issuers with a JWKS
// file, and API keys with their SHA-256.
package authtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"
)

// Issuer signs JWTs with an ES256 key of its own.
type Issuer struct {
	t    testing.TB
	priv jwk.Key
	pub  jwk.Key
	Name string
}

// NewIssuer makes an issuer called name with a fresh key (key id kid).
func NewIssuer(t testing.TB, name, kid string) *Issuer {
	t.Helper()
	raw, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := jwk.Import(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := priv.Set(jwk.KeyIDKey, kid); err != nil {
		t.Fatal(err)
	}
	if err := priv.Set(jwk.AlgorithmKey, jwa.ES256()); err != nil {
		t.Fatal(err)
	}
	pub, err := priv.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return &Issuer{t: t, priv: priv, pub: pub, Name: name}
}

// WriteJWKS writes a JWKS file holding the public keys of issuers and
// returns its path.
func WriteJWKS(t testing.TB, issuers ...*Issuer) string {
	t.Helper()
	set := jwk.NewSet()
	for _, is := range issuers {
		if err := set.AddKey(is.pub); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Token signs a JWT for sub with audience aud, valid for ttl (negative: it
// has expired).
func (is *Issuer) Token(sub, aud string, ttl time.Duration) string {
	is.t.Helper()
	return is.sign(is.claims(sub, aud).Expiration(time.Now().Add(ttl)))
}

// TokenForEver signs a JWT for sub with audience aud that says no
// expiry (no "exp").
func (is *Issuer) TokenForEver(sub, aud string) string {
	is.t.Helper()
	return is.sign(is.claims(sub, aud))
}

func (is *Issuer) claims(sub, aud string) *jwt.Builder {
	return jwt.NewBuilder().Issuer(is.Name).Subject(sub).Audience([]string{aud}).IssuedAt(time.Now().Add(-time.Minute))
}

func (is *Issuer) sign(b *jwt.Builder) string {
	is.t.Helper()
	tok, err := b.Build()
	if err != nil {
		is.t.Fatal(err)
	}
	signed, err := jwt.Sign(tok, jwt.WithKey(jwa.ES256(), is.priv))
	if err != nil {
		is.t.Fatal(err)
	}
	return string(signed)
}

// NoneToken is an unsigned JWT ("alg": "none") claiming sub.
func NoneToken(iss, sub, aud string) string {
	enc := base64.RawURLEncoding.EncodeToString
	h, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT"})
	p, _ := json.Marshal(map[string]any{"iss": iss, "sub": sub, "aud": aud, "exp": time.Now().Add(time.Hour).Unix()})
	return enc(h) + "." + enc(p) + "."
}

// KeyHash is the hex SHA-256 of an API key, as the configuration keeps it.
func KeyHash(key string) string {
	s := sha256.Sum256([]byte(key))
	return hex.EncodeToString(s[:])
}
