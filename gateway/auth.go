package gateway

import (
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jetgate/jetgate/internal/auth"
)

// authenticate answers 401, with WWW-Authenticate: Bearer, to a request
// without good credentials, and otherwise passes the principal on in the
// request's context (from where the assertion to the gRPC chain is made).
func authenticate(o Options) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if o.LocalOnly && !loopbackHost(r.Host) {
				err := fmt.Errorf("%w: the request names host %q: this gateway runs without authentication and serves loopback alone, so it takes requests for localhost, 127.0.0.1 or [::1] only (a web page given this machine's address under its own name would otherwise reach it); call it by one of those (a proxy in front: have it send one as Host), or configure auth, or set auth.allow_unauthenticated to serve any host",
					auth.ErrPermissionDenied, r.Host)
				if o.Denied != nil {
					o.Denied(r, err)
				}
				writeStatus(w, http.StatusForbidden, status.New(codes.PermissionDenied, err.Error()), "PERMISSION_DENIED")
				return
			}
			if len(r.Header.Values("Authorization")) > 1 {
				st := status.New(codes.InvalidArgument, "send one Authorization header, not several")
				writeStatus(w, http.StatusBadRequest, st, "INVALID_ARGUMENT")
				return
			}
			if o.Auth == nil || r.Method == http.MethodOptions {
				next.ServeHTTP(w, r)
				return
			}
			p, until, err := o.Auth.AuthenticateUntil(auth.Bearer(r.Header.Get("Authorization")), verifiedCert(r))
			if err != nil {
				if o.Denied != nil {
					o.Denied(r, err)
				}
				w.Header().Set("WWW-Authenticate", `Bearer realm="jetgate"`)
				st := status.New(codes.Unauthenticated, auth.CredentialsHint)
				writeStatus(w, http.StatusUnauthorized, st, "UNAUTHENTICATED")
				return
			}
			w.Header().Del("Connection") // authenticated: anonymousCloses's mark goes
			next.ServeHTTP(w, r.WithContext(auth.WithUntil(auth.WithPrincipal(r.Context(), p), until)))
		})
	}
}

// anonymousCloses ends the connection of every answer to a request that
// authenticated nobody (refused 401, a probe, the console's files), as gRPC
// closes a connection that only such calls used: a keep-alive connection
// whose requests kept it busy held one of limits.max_connections for good,
// and that many of them, without any credential, locked every caller out.
// authenticate takes the mark off a request it lets in.
func anonymousCloses(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		next.ServeHTTP(w, r)
	})
}

// granted answers 403 to an authenticated caller without a grant of action
// (on any stream): a page that is not one stream's, such as /metrics.
func granted(o Options, action auth.Action, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.Auth != nil {
			p := auth.Principal(r.Context())
			if err := o.Auth.AuthorizeAny(p, action, ""); err != nil {
				if o.Denied != nil {
					o.Denied(r, err)
				}
				st := status.New(codes.PermissionDenied, fmt.Sprintf("%s may not read this page: it needs a grant of the %s action", p, action))
				writeStatus(w, http.StatusForbidden, st, "PERMISSION_DENIED")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether the host a request names (its Host header,
// with or without a port) is a loopback one.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func verifiedCert(r *http.Request) *x509.Certificate {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return nil
	}
	return r.TLS.VerifiedChains[0][0]
}

// cors answers the CORS preflight of, and allows, only the configured
// origins; any other origin gets no CORS headers, so a browser keeps its
// page from reading the answer (and, the body being JSON, from sending
// anything but a preflighted request).
func cors(origins []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		allowed := origin != "" && slices.Contains(origins, origin)
		if allowed {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Allow-Credentials", "true")
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			if !allowed {
				w.WriteHeader(http.StatusForbidden)
				return
			}
			h := w.Header()
			h.Set("Access-Control-Allow-Methods", "GET, POST, PATCH, DELETE")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, traceparent, tracestate")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}
