package auth_test

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/auth"
	"github.com/jetgate/jetgate/internal/authtest"
)

func newAuth(t *testing.T, cfg auth.Config) *auth.Authenticator {
	t.Helper()
	a, err := auth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAuthenticate(t *testing.T) {
	good := authtest.NewIssuer(t, "https://idp.example", "k1")
	stranger := authtest.NewIssuer(t, "https://idp.example", "k2") // same name, key not in the JWKS
	a := newAuth(t, auth.Config{
		APIKeys: []auth.APIKey{{Principal: "billing-svc", SHA256: authtest.KeyHash("key-one")}, {Principal: "ops", SHA256: authtest.KeyHash("key-two")}},
		JWT:     &auth.JWT{JWKSFile: authtest.WriteJWKS(t, good), Issuer: "https://idp.example", Audience: "jetgate"},
		MTLS:    true,
	})
	uri, _ := url.Parse("spiffe://example/ns/billing")
	tests := []struct {
		name   string
		bearer string
		cert   *x509.Certificate
		want   string // "" expects ErrUnauthenticated
	}{
		{"api key", "key-one", nil, "billing-svc"},
		{"another api key", "key-two", nil, "ops"},
		{"wrong key", "key-three", nil, ""},
		{"key prefix", "key-on", nil, ""},
		{"jwt", good.Token("alice", "jetgate", time.Hour), nil, "alice"},
		{"expired jwt", good.Token("alice", "jetgate", -time.Hour), nil, ""},
		{"jwt that never expires", good.TokenForEver("alice", "jetgate"), nil, ""},
		{"jwt for another audience", good.Token("alice", "other-service", time.Hour), nil, ""},
		{"jwt signed by a key not in the JWKS", stranger.Token("alice", "jetgate", time.Hour), nil, ""},
		{"alg none", authtest.NoneToken("https://idp.example", "alice", "jetgate"), nil, ""},
		{"jwt without subject", good.Token("", "jetgate", time.Hour), nil, ""},
		{"certificate URI SAN", "", &x509.Certificate{URIs: []*url.URL{uri}, Subject: pkix.Name{CommonName: "cn"}}, "spiffe://example/ns/billing"},
		{"certificate CN", "", &x509.Certificate{Subject: pkix.Name{CommonName: "payments"}}, "payments"},
		{"a bad bearer is not saved by a certificate", "nope", &x509.Certificate{Subject: pkix.Name{CommonName: "payments"}}, ""},
		{"nothing", "", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := a.Authenticate(tt.bearer, tt.cert)
			if tt.want == "" {
				if !errors.Is(err, auth.ErrUnauthenticated) {
					t.Fatalf("Authenticate = %q, %v; want ErrUnauthenticated", got, err)
				}
				if tt.bearer != "" && strings.Contains(err.Error(), tt.bearer) {
					t.Fatalf("the error shows the credential: %v", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Authenticate = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestCertificateNeedsMTLS(t *testing.T) {
	a := newAuth(t, auth.Config{APIKeys: []auth.APIKey{{Principal: "p", SHA256: authtest.KeyHash("k")}}})
	if _, err := a.Authenticate("", &x509.Certificate{Subject: pkix.Name{CommonName: "x"}}); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("a certificate authenticated with mtls off: %v", err)
	}
}

func TestNewRefusesBadConfigs(t *testing.T) {
	good := authtest.NewIssuer(t, "https://idp.example", "k1")
	for name, cfg := range map[string]auth.Config{
		"short hash":     {APIKeys: []auth.APIKey{{Principal: "p", SHA256: "abcd"}}},
		"no principal":   {APIKeys: []auth.APIKey{{SHA256: authtest.KeyHash("k")}}},
		"no jwks file":   {JWT: &auth.JWT{}},
		"missing jwks":   {JWT: &auth.JWT{JWKSFile: "/nonexistent/jwks.json", Issuer: "https://idp.example", Audience: "jetgate"}},
		"no issuer":      {JWT: &auth.JWT{JWKSFile: authtest.WriteJWKS(t, good), Audience: "jetgate"}},
		"no audience":    {JWT: &auth.JWT{JWKSFile: authtest.WriteJWKS(t, good), Issuer: "https://idp.example"}},
		"unknown action": {Grants: []auth.Grant{{Principal: "p", Stream: "*", Consumers: []string{"*"}, Actions: []auth.Action{"delete"}}}},
		"no actions":     {Grants: []auth.Grant{{Principal: "p", Stream: "*"}}},
	} {
		if _, err := auth.New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestAuthorize(t *testing.T) {
	a := newAuth(t, auth.Config{Grants: []auth.Grant{
		{Principal: "billing-svc", Stream: "ORDERS", Consumers: []string{"billing"}, Actions: []auth.Action{auth.ActionFetch, auth.ActionSettle}},
		{Principal: "dashboard", Stream: "*", Consumers: []string{"*"}, Actions: []auth.Action{auth.ActionRead}},
		{Principal: "shop", Stream: "ORDERS", Actions: []auth.Action{auth.ActionPublish}},
	}})
	tests := []struct {
		p       string
		a       auth.Action
		s, c    string
		allowed bool
	}{
		{"billing-svc", auth.ActionFetch, "ORDERS", "billing", true},
		{"billing-svc", auth.ActionSettle, "ORDERS", "billing", true},
		{"billing-svc", auth.ActionRead, "ORDERS", "billing", false},
		{"billing-svc", auth.ActionFetch, "ORDERS", "audit", false},
		{"billing-svc", auth.ActionFetch, "PAYMENTS", "billing", false},
		{"dashboard", auth.ActionRead, "PAYMENTS", "anything", true},
		{"dashboard", auth.ActionFetch, "ORDERS", "billing", false},
		{"shop", auth.ActionPublish, "ORDERS", "", true},
		{"shop", auth.ActionPublish, "PAYMENTS", "", false},
		{"shop", auth.ActionRedrive, "ORDERS", "billing", false},
		{"nobody", auth.ActionRead, "ORDERS", "billing", false},
	}
	for _, tt := range tests {
		err := a.Authorize(tt.p, tt.a, tt.s, tt.c)
		if tt.allowed != (err == nil) || (err != nil && !errors.Is(err, auth.ErrPermissionDenied)) {
			t.Errorf("Authorize(%s, %s, %s, %s) = %v; allowed %t", tt.p, tt.a, tt.s, tt.c, err, tt.allowed)
		}
	}
}
