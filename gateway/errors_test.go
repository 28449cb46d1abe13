package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func withInfo(t *testing.T, st *status.Status, domain, reason string) error {
	t.Helper()
	d, err := st.WithDetails(&errdetails.ErrorInfo{Domain: domain, Reason: reason})
	if err != nil {
		t.Fatal(err)
	}
	return d.Err()
}

// The REST error handler passes on the text of jetgate's own errors and of
// grpc-gateway's answers to bad input, and nothing else: a transport's text
// (a response over the gRPC client's 4 MiB limit, a dial error) is logged
// once and replaced with a fixed sentence for its code.
func TestErrorHandlerReplacesTransportText(t *testing.T) {
	const tooBig = "grpc: received message larger than max (5242880 vs. 4194304)"
	tests := []struct {
		name     string
		err      error
		status   int
		message  string // want exactly
		replaced bool
	}{
		{"response over the receive limit", status.Error(codes.ResourceExhausted, tooBig), http.StatusTooManyRequests,
			"the response is larger than the gateway accepts from its backend; fetch fewer or smaller messages", true},
		{"over the limit, another domain's ErrorInfo", withInfo(t, status.New(codes.ResourceExhausted, tooBig), "grpc.io", "X"),
			http.StatusTooManyRequests, "the response is larger than the gateway accepts from its backend; fetch fewer or smaller messages", true},
		{"dial error", status.Error(codes.Unavailable, "connection error: desc = \"transport: Error while dialing: dial tcp 10.0.0.7:9090: connect: connection refused\""),
			http.StatusServiceUnavailable, "the jetgate service is unavailable; retry", true},
		{"internal", status.Error(codes.Internal, "grpc: error unmarshalling request: proto: cannot parse invalid wire-format data"),
			http.StatusInternalServerError, "internal error; see the gateway log", true},
		{"deadline", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), http.StatusGatewayTimeout, "the deadline passed", true},
		{"not a status", errors.New("write tcp 10.0.0.7:8080: broken pipe"), http.StatusInternalServerError, "internal error; see the gateway log", true},
		{"an unlisted code", status.Error(codes.OutOfRange, "transport detail 10.0.0.7"), http.StatusBadRequest,
			"the jetgate service failed (OutOfRange); see the gateway log", true},

		{"jetgate's own", withInfo(t, status.New(codes.FailedPrecondition, `stream "ORDERS" refused the message: wrong last sequence: 3`), "jetgate", "PUBLISH_REFUSED"),
			http.StatusBadRequest, `stream "ORDERS" refused the message: wrong last sequence: 3`, false},
		{"jetgate's own unavailable", withInfo(t, status.New(codes.Unavailable, "NATS JetStream is unavailable or did not answer in time; retry"), "jetgate", "NATS_UNAVAILABLE"),
			http.StatusServiceUnavailable, "NATS JetStream is unavailable or did not answer in time; retry", false},
		{"a body grpc-gateway cannot parse", status.Error(codes.InvalidArgument, "proto: syntax error (line 1:9): unexpected token"),
			http.StatusBadRequest, "proto: syntax error (line 1:9): unexpected token", false},
		{"a path grpc-gateway does not serve", status.Error(codes.NotFound, "Not Found"), http.StatusNotFound, "Not Found", false},
		{"a method the path does not take", status.Error(codes.Unimplemented, "Method Not Allowed"), http.StatusNotImplemented, "Method Not Allowed", false},
		{"a malformed path", &runtime.HTTPStatusError{HTTPStatus: http.StatusBadRequest, Err: errors.New("malformed path escape \"%zz\"")},
			http.StatusBadRequest, "malformed path escape \"%zz\"", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logged bytes.Buffer
			h := errorHandler(slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug})))
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, "/v1/streams/ORDERS/consumers/billing:fetch", nil)
			h(context.Background(), runtime.NewServeMux(), &runtime.JSONPb{}, rec, req, tt.err)

			if rec.Code != tt.status {
				t.Errorf("HTTP status %d; want %d", rec.Code, tt.status)
			}
			var body struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", rec.Body.Bytes(), err)
			}
			if body.Message != tt.message {
				t.Errorf("message %q; want %q", body.Message, tt.message)
			}
			for _, leak := range []string{"grpc:", "larger than max", "10.0.0.7", "dial"} {
				if tt.replaced && strings.Contains(rec.Body.String(), leak) {
					t.Errorf("body %s passes on %q", rec.Body.Bytes(), leak)
				}
			}
			switch n := strings.Count(logged.String(), "gRPC backend error"); {
			case tt.replaced && n != 1:
				t.Errorf("logged %d times; want once: %s", n, logged.String())
			case tt.replaced && !strings.Contains(logged.String(), tt.err.Error()[:20]):
				t.Errorf("the log %q does not keep the original text", logged.String())
			case !tt.replaced && n != 0:
				t.Errorf("a caller-visible error was logged as a backend error: %s", logged.String())
			}
		})
	}
}

func TestStreamErrorHandlerReplacesTransportText(t *testing.T) {
	var logged bytes.Buffer
	h := streamErrorHandler(slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug})))
	st := h(context.Background(), status.Error(codes.ResourceExhausted, "grpc: received message larger than max (5242880 vs. 4194304)"))
	if st.Code() != codes.ResourceExhausted || strings.Contains(st.Message(), "larger than max") {
		t.Errorf("stream error %v; want ResourceExhausted with the fixed sentence", st)
	}
	if !strings.Contains(logged.String(), "larger than max") {
		t.Errorf("the original text was not logged: %s", logged.String())
	}
	own := withInfo(t, status.New(codes.NotFound, `consumer "billing" was deleted`), "jetgate", "CONSUMER_NOT_FOUND")
	if got := h(context.Background(), own); got.Message() != `consumer "billing" was deleted` {
		t.Errorf("jetgate's own stream error became %v", got)
	}
}
