package gateway

import (
	"net/http"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jetgate/jetgate/internal/errs"
)

// Starting is what the REST listener answers while the process waits for
// what it serves from (NATS and JetStream, at start-up): /healthz ok, since
// the process is alive and waits of itself; /readyz and every other route
// 503, saying why in words that name nothing of the configuration.
func Starting(reason string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", probe(nil, "ok", "unhealthy"))
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": reason})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeStatus(w, http.StatusServiceUnavailable, startingStatus(reason), errs.Reason(errs.ErrUnavailable))
	})
	return mux
}

// StartingError is what the gRPC listener answers meanwhile to every call
// but Health's: REST's answer, as a gRPC status.
func StartingError(reason string) error {
	st := startingStatus(reason)
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: errs.Reason(errs.ErrUnavailable), Domain: "jetgate"}); err == nil {
		st = d
	}
	return st.Err()
}

func startingStatus(reason string) *status.Status {
	return status.New(codes.Unavailable, "jetgate is starting: "+reason)
}
