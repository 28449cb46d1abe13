package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/jetgate/jetgate/internal/errs"
)

// Errors of authentication and authorization: the domain's own, which the
// gRPC face turns into UNAUTHENTICATED and PERMISSION_DENIED.
var (
	ErrUnauthenticated  = errs.ErrUnauthenticated
	ErrPermissionDenied = errs.ErrPermissionDenied
)

// APIKey is a key a caller sends as "Authorization: Bearer <key>"; only
// its SHA-256 is kept.
type APIKey struct {
	Principal string
	SHA256    string // hex
}

// JWT verifies bearer JWTs against the keys of a JWKS file; the principal is
// the token's subject.
type JWT struct {
	JWKSFile string
	Issuer   string
	Audience string
}

// Config is how callers authenticate and what they may do.
type Config struct {
	APIKeys []APIKey
	JWT     *JWT
	MTLS    bool // a verified client certificate authenticates its holder
	Grants  []Grant
}

// Enabled reports whether the configuration authenticates anybody.
func (c Config) Enabled() bool { return len(c.APIKeys) > 0 || c.JWT != nil || c.MTLS }

// jwksReload is how often the JWKS file is checked for a change.
const jwksReload = 10 * time.Second

// Authenticator authenticates and authorizes callers. Its zero value is
// never used; New makes one.
type Authenticator struct {
	keys   []apiKey
	jwt    *JWT
	mtls   bool
	grants []Grant

	mu       sync.Mutex
	set      jwk.Set
	modTime  time.Time
	checked  time.Time
	loadFile func(string) (jwk.Set, error)

	compare func(x, y []byte) int // subtle.ConstantTimeCompare; a test counts its calls
}

type apiKey struct {
	principal string
	sum       [sha256.Size]byte
}

// New checks cfg and loads its JWKS file.
func New(cfg Config) (*Authenticator, error) {
	a := &Authenticator{jwt: cfg.JWT, mtls: cfg.MTLS, loadFile: func(p string) (jwk.Set, error) { return jwk.ReadFile(p) }}
	a.compare = subtle.ConstantTimeCompare
	for i, k := range cfg.APIKeys {
		b, err := hex.DecodeString(strings.TrimSpace(k.SHA256))
		if err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("auth.api_keys[%d].sha256: give the hex SHA-256 of the key (64 hex digits)", i)
		}
		if k.Principal == "" || len(k.Principal) > MaxPrincipal {
			return nil, fmt.Errorf("auth.api_keys[%d].principal is required, at most %d bytes", i, MaxPrincipal)
		}
		a.keys = append(a.keys, apiKey{k.Principal, [sha256.Size]byte(b)})
	}
	if cfg.JWT != nil {
		switch {
		case cfg.JWT.JWKSFile == "":
			return nil, errors.New("auth.jwt.jwks_file is required")
		case cfg.JWT.Issuer == "" || cfg.JWT.Audience == "":
			return nil, errors.New("auth.jwt.issuer and auth.jwt.audience are required: without them a token signed for another service or by another issuer would pass")
		}
		if err := a.reloadJWKS(time.Now(), true); err != nil {
			return nil, err
		}
	}
	grants, err := checkGrants(cfg.Grants)
	if err != nil {
		return nil, err
	}
	a.grants = grants
	return a, nil
}

// Authenticate returns the principal a bearer credential or a verified
// client certificate names. A bearer credential, when given, must be good;
// the certificate counts only with mTLS on.
func (a *Authenticator) Authenticate(bearer string, cert *x509.Certificate) (string, error) {
	p, _, err := a.AuthenticateUntil(bearer, cert)
	return p, err
}

// AuthenticateUntil is Authenticate, and says until when the credential is
// taken: a JWT's exp, with the skew allowed. It is zero for an API key, and
// for a certificate (checked at the handshake).
func (a *Authenticator) AuthenticateUntil(bearer string, cert *x509.Certificate) (string, time.Time, error) {
	p, until, err := a.authenticate(bearer, cert)
	if err == nil && len(p) > MaxPrincipal {
		return "", time.Time{}, fmt.Errorf("%w: the credential names a principal of %d bytes; jetgate takes at most %d", ErrUnauthenticated, len(p), MaxPrincipal)
	}
	return p, until, err
}

func (a *Authenticator) authenticate(bearer string, cert *x509.Certificate) (string, time.Time, error) {
	if bearer != "" {
		if p, ok := a.apiKey(bearer); ok {
			return p, time.Time{}, nil
		}
		if a.jwt != nil {
			return a.verifyJWT(bearer)
		}
		return "", time.Time{}, fmt.Errorf("%w: the bearer key is not known", ErrUnauthenticated)
	}
	if a.mtls && cert != nil {
		if p := certPrincipal(cert); p != "" {
			return p, time.Time{}, nil
		}
		return "", time.Time{}, fmt.Errorf("%w: the client certificate names nobody (no URI SAN, no Common Name)", ErrUnauthenticated)
	}
	return "", time.Time{}, fmt.Errorf("%w: send Authorization: Bearer <key or JWT>%s", ErrUnauthenticated, map[bool]string{true: ", or a client certificate", false: ""}[a.mtls])
}

func (a *Authenticator) apiKey(bearer string) (string, bool) {
	sum := sha256.Sum256([]byte(bearer))
	found := ""
	for _, k := range a.keys {
		// Every key is compared, so the time taken says nothing of which
		// matched, or how much of one.
		if a.compare(sum[:], k.sum[:]) == 1 {
			found = k.principal
		}
	}
	return found, found != ""
}

// jwtSkew is the clock skew a JWT's exp and nbf are allowed.
const jwtSkew = 30 * time.Second

func (a *Authenticator) verifyJWT(s string) (string, time.Time, error) {
	if err := a.reloadJWKS(time.Now(), false); err != nil {
		return "", time.Time{}, fmt.Errorf("%w: %v", ErrUnauthenticated, err)
	}
	a.mu.Lock()
	set := a.set
	a.mu.Unlock()
	opts := []jwt.ParseOption{
		jwt.WithKeySet(set, jws.WithInferAlgorithmFromKey(true)),
		jwt.WithValidate(true),
		jwt.WithAcceptableSkew(jwtSkew),
		jwt.WithRequiredClaim("exp"), // one without would be a credential for ever
	}
	if a.jwt.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(a.jwt.Issuer))
	}
	if a.jwt.Audience != "" {
		opts = append(opts, jwt.WithAudience(a.jwt.Audience))
	}
	tok, err := jwt.Parse([]byte(s), opts...)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: the bearer token is neither a known key nor a valid JWT", ErrUnauthenticated)
	}
	sub, ok := tok.Subject()
	if !ok || sub == "" {
		return "", time.Time{}, fmt.Errorf("%w: the JWT has no subject", ErrUnauthenticated)
	}
	exp, _ := tok.Expiration() // required above
	return sub, exp.Add(jwtSkew), nil
}

// reloadJWKS reads the JWKS file again when it changed, at most every
// jwksReload (or now, when forced).
func (a *Authenticator) reloadJWKS(now time.Time, force bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !force && now.Sub(a.checked) < jwksReload {
		return nil
	}
	a.checked = now
	st, err := os.Stat(a.jwt.JWKSFile)
	if err != nil {
		if force {
			return fmt.Errorf("auth.jwt.jwks_file: %w", err)
		}
		return nil // keep the keys we have
	}
	if !force && st.ModTime().Equal(a.modTime) {
		return nil
	}
	set, err := a.loadFile(a.jwt.JWKSFile)
	if err != nil {
		if force {
			return fmt.Errorf("auth.jwt.jwks_file %s: %w", a.jwt.JWKSFile, err)
		}
		return nil
	}
	a.set, a.modTime = set, st.ModTime()
	return nil
}

// certPrincipal is a certificate's first URI SAN, else its Common Name.
func certPrincipal(c *x509.Certificate) string {
	if len(c.URIs) > 0 {
		return c.URIs[0].String()
	}
	return c.Subject.CommonName
}
