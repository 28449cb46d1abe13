// Package gateway serves jetgate's REST/JSON API: a grpc-gateway mux that
// dials the gRPC server, plus health, readiness and the OpenAPI document.
package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/jetgate/jetgate/api"
	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// DefaultMaxBodyBytes bounds a request body: 1000 tokens of 256 characters
// fit with room to spare, and so does a modest Publish.
const DefaultMaxBodyBytes = 4 << 20

// Options configure the REST gateway.
type Options struct {
	// GRPCAddr is the gRPC server to dial.
	GRPCAddr string
	// MaxBodyBytes bounds request bodies; larger ones get 413.
	MaxBodyBytes int64
	// Ready reports whether the service can take traffic, for /readyz.
	Ready func() error
	// Metrics, if set, serves GET /metrics.
	Metrics http.Handler
	Logger  *slog.Logger
}

// REST is the REST handler and its connection to the gRPC server.
type REST struct {
	http.Handler
	conn *grpc.ClientConn
}

// New dials the gRPC server and builds the handler. Close releases the
// connection.
func New(ctx context.Context, o Options) (*REST, error) {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	conn, err := grpc.NewClient(o.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("dial gRPC server %s: %w", o.GRPCAddr, err)
	}
	mux := runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, &runtime.JSONPb{
			MarshalOptions:   protojson.MarshalOptions{EmitUnpopulated: true},
			UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
		}),
		runtime.WithErrorHandler(errorHandler(o.Logger)),
	)
	if err := jetgatev1.RegisterConsumerServiceHandler(ctx, mux, conn); err != nil {
		_ = conn.Close()
		return nil, err
	}
	if err := jetgatev1.RegisterStreamServiceHandler(ctx, mux, conn); err != nil {
		_ = conn.Close()
		return nil, err
	}
	root := http.NewServeMux()
	root.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	root.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if o.Ready != nil {
			if err := o.Ready(); err != nil {
				writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": err.Error()})
				return
			}
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	root.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(api.OpenAPI)
	})
	if o.Metrics != nil {
		root.Handle("GET /metrics", o.Metrics)
	}
	root.Handle("/", limitBody(mux, o.MaxBodyBytes))
	return &REST{Handler: root, conn: conn}, nil
}

// Close closes the connection to the gRPC server.
func (g *REST) Close() error { return g.conn.Close() }

// limitBody answers 413 to a body larger than limit before anything decodes
// it.
func limitBody(next http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit {
			tooLarge(w, limit)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
			if err != nil {
				writeStatus(w, http.StatusBadRequest, status.New(codes.InvalidArgument, "could not read the request body"), "BODY_UNREADABLE")
				return
			}
			if int64(len(b)) > limit {
				tooLarge(w, limit)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		next.ServeHTTP(w, r)
	})
}

func tooLarge(w http.ResponseWriter, limit int64) {
	st := status.Newf(codes.InvalidArgument, "the request body is larger than %d bytes", limit)
	writeStatus(w, http.StatusRequestEntityTooLarge, st, "BODY_TOO_LARGE")
}

// writeStatus writes st as grpc-gateway writes errors, with an ErrorInfo.
func writeStatus(w http.ResponseWriter, code int, st *status.Status, reason string) {
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: "jetgate"}); err == nil {
		st = d
	}
	b, err := protojson.Marshal(st.Proto())
	if err != nil {
		b = []byte(`{"code":13,"message":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// errorHandler renders errors as grpc-gateway does, but never passes on the
// text of an error that did not come from jetgate's own services (a failed
// connection to the gRPC server, say): that text is logged instead.
func errorHandler(log *slog.Logger) runtime.ErrorHandlerFunc {
	return func(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
		st, ok := status.FromError(err)
		if ok && len(st.Details()) == 0 {
			switch st.Code() {
			case codes.Unavailable, codes.Internal, codes.Unknown:
				log.Warn("gRPC backend error", "path", r.URL.Path, "code", st.Code(), "err", st.Message())
				err = status.Error(st.Code(), "the jetgate service is unavailable; retry")
			}
		}
		runtime.DefaultHTTPErrorHandler(ctx, mux, m, w, r, err)
	}
}
