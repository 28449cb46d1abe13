// Package gateway serves jetgate's REST/JSON API: a grpc-gateway mux over
// the services in process (Consume, a stream, over an in-memory gRPC
// connection), both through the gRPC interceptor chain, plus health,
// readiness, metrics and the OpenAPI document.
package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/jetgate/jetgate/api"
	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/auth"
	"github.com/jetgate/jetgate/internal/errs"
)

// pathOverhead is what a REST request's path adds to its body in the gRPC
// request it becomes: the stream and consumer names (at most 255 bytes each
// in NATS) and their framing, with room to spare.
const pathOverhead = 4 << 10

// RequestLimit is the largest gRPC request that a REST request within the
// body limit n turns into: the body, whose protobuf encoding is no larger
// than its JSON, plus the fields taken from the path. The gRPC server
// receives no larger request, so that a gRPC caller is bounded as a REST one
// is, and a REST body at the limit still passes.
func RequestLimit(n int64) int { return int(n) + pathOverhead }

// Options configure the REST gateway.
type Options struct {
	// GRPCAddr is the gRPC server to dial.
	GRPCAddr string
	// MaxBodyBytes bounds request bodies; larger ones get 413.
	MaxBodyBytes int64
	// Ready reports whether the service can take traffic, for /readyz.
	Ready func() error
	// Live reports whether the process can still recover by itself, for
	// /healthz: an error there asks to be restarted.
	Live func() error
	// Metrics, if set, serves GET /metrics (to authenticated callers, when
	// authentication is on).
	Metrics http.Handler
	Logger  *slog.Logger
	// DialOptions are added to the connection to the gRPC server (an
	// in-process dialer, say).
	DialOptions []grpc.DialOption
	// Auth authenticates each API call over HTTP; nil lets everybody in as
	// the empty principal. The principal reaches the gRPC chain, which
	// authorizes it, asserted in auth.AssertedPrincipal: only a chain whose
	// guard is server.Guard.ForREST takes it, so GRPCAddr and Local are the
	// REST side's own road into the services.
	Auth *auth.Authenticator
	// Denied, if set, is told of each call refused here (for the log and
	// the denial metric).
	Denied func(r *http.Request, err error)
	// LocalOnly is set where authentication is off (and not explicitly
	// allowed to be: auth.allow_unauthenticated) and the listener takes
	// loopback connections alone: a request must then name a loopback host
	// (localhost, 127.0.0.1, [::1]). A web page whose own name an attacker
	// points at 127.0.0.1 (DNS rebinding) is, to the browser, the same
	// origin as this gateway; its requests name the page's host.
	LocalOnly bool
	// ClientCertRequired is set where the listener asks for client
	// certificates (listen.tls.client_ca) but takes a handshake without one
	// (tlsfiles.CertIfGiven): every request but the probes needs a verified
	// one.
	ClientCertRequired bool
	// KeptForProbes, if set, reports whether a request came on a
	// connection the listener took beyond its limit for the probes alone:
	// a probe there is answered and the connection closed, anything else
	// is refused 503 TOO_MANY_CONNECTIONS.
	KeptForProbes func(*http.Request) bool
	// CORSOrigins are the origins whose pages may call the API from a
	// browser; none by default.
	CORSOrigins []string
	// Console serves the operator console at /console (console.go).
	Console bool
	// WriteStall bounds how long one write of a Consume stream waits for
	// its caller to read; 0 is DefaultWriteStall.
	WriteStall time.Duration
	// Local, if set, is the road to the services over the dialed
	// connection: the services in process for unary calls (server.Local),
	// the connection for streams. Unset: the connection for everything.
	Local func(conn grpc.ClientConnInterface) grpc.ClientConnInterface
	// Refused, if set, is told of each call of the API refused here, before
	// it reached the services (whose interceptors count the rest), with the
	// code of the answer and how long it took.
	Refused func(method string, code codes.Code, took time.Duration)
}

// REST is the REST handler and its connection to the gRPC server.
type REST struct {
	http.Handler
	conn   *grpc.ClientConn
	routes routeTable
}

// Route is the API route a request of method on path calls, as the OpenAPI
// document names it ("/v1/streams/{stream}/consumers/{consumer}:fetch"),
// or "" where it calls none: a name of few values, for spans and the like.
func (g *REST) Route(method, path string) string { return g.routes.template(path, method) }

// New dials the gRPC server and builds the handler. Close releases the
// connection.
func New(ctx context.Context, o Options) (*REST, error) {
	if o.MaxBodyBytes <= 0 {
		return nil, errors.New("gateway: no body limit")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	// The REST side takes its backend's responses whole: its callers read
	// JSON, with no gRPC client's 4 MiB limit, and a Consume burst of a
	// gateway whose max_fetch_bytes is raised is larger.
	dial := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32)),
	}, o.DialOptions...)
	conn, err := grpc.NewClient(o.GRPCAddr, dial...)
	if err != nil {
		return nil, fmt.Errorf("dial gRPC server %s: %w", o.GRPCAddr, err)
	}
	calls, err := apiHandler(ctx, o, conn)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	root := http.NewServeMux()
	// The probes answer anyone, so they say only yes or no; the log says why.
	root.HandleFunc("GET /healthz", probe(o.Live, "ok", "unhealthy"))
	root.HandleFunc("GET /readyz", probe(o.Ready, "ready", "unavailable"))
	root.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(api.OpenAPI)
	})
	if o.Console {
		root.Handle("GET /console", consoleHandler())
		root.Handle("GET /console/", consoleHandler())
	}
	authn := authenticate(o)
	if o.Metrics != nil {
		root.Handle("GET /metrics", authn(granted(o, auth.ActionMetrics, o.Metrics)))
	}
	routes, err := loadRoutes(api.OpenAPI)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	root.Handle("/", track(routes, o.Refused, cors(o.CORSOrigins, authn(routes.routes(admitBody(streaming(calls, cmp.Or(o.WriteStall, DefaultWriteStall)), o.MaxBodyBytes))))))
	var h http.Handler = root
	if o.ClientCertRequired {
		h = clientCertRequired(h)
	}
	if o.Auth != nil {
		h = anonymousCloses(h)
	}
	if o.KeptForProbes != nil {
		h = probesOnly(o.KeptForProbes, h)
	}
	return &REST{Handler: h, conn: conn, routes: routes}, nil
}

// clientCertRequired answers 401 to a request without a verified client
// certificate, but for the probes: the listener takes a handshake without
// one (tlsfiles.CertIfGiven) so that the kubelet, which presents none, can
// call them.
func clientCertRequired(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isProbe(r) && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
			writeStatus(w, http.StatusUnauthorized, status.New(codes.Unauthenticated,
				"a client certificate is required: this gateway takes only callers with one that chains to its listen.tls.client_ca"), "UNAUTHENTICATED")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isProbe reports whether r is the kubelet's: GET (or HEAD) /healthz or
// /readyz.
func isProbe(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && (r.URL.Path == "/healthz" || r.URL.Path == "/readyz")
}

// probesOnly serves a request on a connection kept for the probes only if
// it is a probe, and closes the connection after it either way: the
// listener's places for callers are all held, and a caller waits for one
// (503, as a busy server says) rather than taking the probes' few.
func probesOnly(kept func(*http.Request) bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !kept(r) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		if !isProbe(r) {
			w.Header().Set("Retry-After", "1")
			writeStatus(w, http.StatusServiceUnavailable, status.New(codes.Unavailable,
				"this listener holds limits.max_connections connections already: this connection, one of the few kept for the probes, serves only GET /healthz and /readyz; try again later"),
				"TOO_MANY_CONNECTIONS")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// none matches no header: grpc-gateway's matcher of what crosses between
// HTTP headers and gRPC metadata.
func none(string) (string, bool) { return "", false }

// apiHandler serves the API's routes: unary calls to the services in
// process when given them, Consume (a stream) and the rest over conn.
func apiHandler(ctx context.Context, o Options, conn *grpc.ClientConn) (http.Handler, error) {
	muxOpts := []runtime.ServeMuxOption{
		runtime.WithMarshalerOption(runtime.MIMEWildcard, newMarshaler()),
		runtime.WithErrorHandler(errorHandler(o.Logger)),
		runtime.WithStreamErrorHandler(streamErrorHandler(o.Logger)),
		runtime.WithForwardResponseOption(opened),
		// No header from outside becomes gRPC metadata (Grpc-Metadata-*
		// included): the caller's identity reaches the gRPC chain only as
		// the assertion made here.
		runtime.WithIncomingHeaderMatcher(none),
		// Nor does the inner gRPC hop's metadata become headers: a Consume's
		// answer carried Grpc-Metadata-Content-Type: application/grpc.
		runtime.WithOutgoingHeaderMatcher(none),
		runtime.WithOutgoingTrailerMatcher(none),
		runtime.WithMetadata(func(ctx context.Context, _ *http.Request) metadata.MD {
			md := metadata.Pairs(auth.AssertedPrincipal, auth.Principal(ctx))
			if until := auth.Until(ctx); !until.IsZero() {
				md.Set(auth.AssertedUntil, strconv.FormatInt(until.UnixMilli(), 10))
			}
			return md
		}),
	}
	// One road for every RPC, unary and streaming: grpc-gateway's client
	// handlers over one client connection to the services, so a new RPC
	// answers over REST with the gRPC server's interceptors by construction.
	var road grpc.ClientConnInterface = conn
	if o.Local != nil {
		road = o.Local(conn)
	}
	road = calledRoad{road}
	mux := runtime.NewServeMux(muxOpts...)
	if err := jetgatev1.RegisterConsumerServiceHandlerClient(ctx, mux, jetgatev1.NewConsumerServiceClient(road)); err != nil {
		return nil, err
	}
	if err := jetgatev1.RegisterStreamServiceHandlerClient(ctx, mux, jetgatev1.NewStreamServiceClient(road)); err != nil {
		return nil, err
	}
	return mux, nil
}

// probe answers 200 with yes while check passes (or is nil), else 503 with no.
func probe(check func() error, yes, no string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if check != nil && check() != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": no})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": yes})
	}
}

// Close closes the connection to the gRPC server.
func (g *REST) Close() error { return g.conn.Close() }

// writeStatus writes st as grpc-gateway writes errors, with an ErrorInfo.
func writeStatus(w http.ResponseWriter, code int, st *status.Status, reason string) {
	noteRefused(w, st.Code())
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: "jetgate"}); err == nil {
		st = d
	}
	b, err := protojson.Marshal(st.Proto())
	if err != nil {
		b = []byte(`{"code":13,"message":"internal error"}`)
	}
	b = compact(b)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// errorHandler renders errors as grpc-gateway does, but passes a caller only
// the text of jetgate's own errors and of grpc-gateway's answers to bad
// input; any other error's text is logged and replaced (see backendStatus).
func errorHandler(log *slog.Logger) runtime.ErrorHandlerFunc {
	return func(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
		noteRefused(w, status.Code(err)) // not counted again where the services answered
		if st, reason, ok := badInput(r, err); ok {
			writeStatus(w, http.StatusBadRequest, st, reason)
			return
		}
		var routing *runtime.HTTPStatusError
		if !errors.As(err, &routing) {
			if st, replaced := backendStatus(status.Convert(err)); replaced {
				log.Log(ctx, logLevel(st.Code()), "gRPC backend error", "path", r.URL.Path, "code", st.Code(), "err", err)
				err = st.Err()
			}
		}
		runtime.DefaultHTTPErrorHandler(ctx, mux, m, w, r, err)
	}
}

// streamErrorHandler is errorHandler for the error that ends a streamed
// response.
func streamErrorHandler(log *slog.Logger) runtime.StreamErrorHandlerFunc {
	return func(ctx context.Context, err error) *status.Status {
		st, replaced := backendStatus(status.Convert(err))
		if replaced {
			log.Log(ctx, logLevel(st.Code()), "gRPC backend error in a stream", "code", st.Code(), "err", err)
		}
		return st
	}
}

// logLevel is how loudly a replaced error is logged: a caller that went away
// or ran out of time is no fault of the gateway's.
func logLevel(c codes.Code) slog.Level {
	if c == codes.Canceled || c == codes.DeadlineExceeded {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

// gatewayCodes are the codes grpc-gateway itself answers bad input with: a
// body, path parameter, query parameter or grpc-timeout it cannot parse
// (InvalidArgument), a path it does not serve (NotFound), a method the path
// does not take (Unimplemented). Their text is about the caller's own
// request.
var gatewayCodes = map[codes.Code]bool{codes.InvalidArgument: true, codes.NotFound: true, codes.Unimplemented: true}

// backendText is what a caller reads instead of a transport error's text.
var backendText = map[codes.Code]string{
	codes.Canceled:          errs.TextCanceled,
	codes.Unknown:           errs.TextInternal,
	codes.DeadlineExceeded:  errs.TextDeadline,
	codes.ResourceExhausted: "the response is larger than the gateway accepts from its backend; fetch fewer or smaller messages",
	codes.Unavailable:       "the jetgate service is unavailable; retry",
	codes.Internal:          errs.TextInternal,
	codes.DataLoss:          errs.TextInternal,
	codes.Unauthenticated:   "the request is not authenticated",
	codes.PermissionDenied:  "the caller is not allowed to do this",
}

// backendStatus is the status a REST caller sees for st. jetgate's own
// errors (with an ErrorInfo of domain jetgate) keep their text, and so do the
// codes of grpc-gateway's own answers to bad input. Any other text came from
// a transport (a failed connection, a message over gRPC's size limit: "grpc:
// received message larger than max …"), and is replaced with a fixed
// sentence for its code; replaced reports that, so that the caller of
// backendStatus logs the original once.
func backendStatus(st *status.Status) (_ *status.Status, replaced bool) {
	if st.Code() == codes.OK || gatewayCodes[st.Code()] || hasJetgateInfo(st) {
		return st, false
	}
	text, ok := backendText[st.Code()]
	if !ok {
		text = fmt.Sprintf("the jetgate service failed (%s); see the gateway log", st.Code())
	}
	return status.New(st.Code(), text), true
}
