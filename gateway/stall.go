package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/proto"
)

// DefaultWriteStall is how long one write of a Consume stream may wait for
// its caller to read: a caller that reads nothing for that long is gone,
// and its stream ends (its leases go back) rather than hold its memory.
const DefaultWriteStall = 30 * time.Second

// streaming replaces the server's write timeout, for a Consume, whose answer
// is a stream that lasts as long as its caller wants it, by a deadline of
// stall on each write (its heartbeats show it is alive).
func streaming(next http.Handler, stall time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ":consume") {
			s := &stallWriter{ResponseWriter: w, rc: http.NewResponseController(w), stall: stall}
			// No deadline but each write's, and the last flush's after the
			// handler.
			_ = s.rc.SetWriteDeadline(time.Time{})
			defer s.bound()
			w = s
		}
		next.ServeHTTP(w, r)
	})
}

// opened sends a stream's status and headers as soon as the gRPC server
// sends its own, once the stream is open (grpc-gateway calls it with no
// message then), rather than with its first line: a caller waiting for the
// answer's headers would otherwise wait for a message or a heartbeat (15s
// by default).
func opened(ctx context.Context, w http.ResponseWriter, m proto.Message) error {
	if m != nil {
		return nil
	}
	// A stream refused before it opened answers trailers only, no headers:
	// its status is then the answer's (grpc-gateway writes it at its error).
	if md, _ := runtime.ServerMetadataFromContext(ctx); len(md.HeaderMD) > 0 {
		w.Header().Set("Content-Type", "application/json")
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	return nil
}

// stallWriter gives each write of a stream its stall.
type stallWriter struct {
	http.ResponseWriter
	rc     *http.ResponseController
	stall  time.Duration
	headed bool // the status went out: an error later is a line of the stream
	// refused: the stream was refused before it opened, and its answer is
	// that error alone (refusal).
	refused bool
}

// within gives one write its stall, and the returned func takes the
// deadline off once the write is done: HTTP/2 resets a stream whose write
// deadline passes whether a write waits or not, so a deadline left between
// writes ended an idle stream whose heartbeat is longer than the stall.
func (s *stallWriter) within() (done func()) {
	s.bound()
	return func() { _ = s.rc.SetWriteDeadline(time.Time{}) }
}

// bound sets the stall's deadline from now, for one write or flush.
func (s *stallWriter) bound() { _ = s.rc.SetWriteDeadline(time.Now().Add(s.stall)) }

func (s *stallWriter) WriteHeader(code int) {
	if !s.headed {
		s.headed, s.refused = true, code != http.StatusOK
		s.ResponseWriter.WriteHeader(code)
	}
}

func (s *stallWriter) Write(b []byte) (int, error) {
	defer s.within()()
	s.headed = true
	if s.refused {
		return s.refusal(b)
	}
	return s.ResponseWriter.Write(b)
}

// refusal writes the error of a stream refused before it opened as every
// other call's error is written, google.rpc.Status's JSON: grpc-gateway
// writes it as a stream's last line, {"error": {...}} and a newline, which
// a caller reading a refusal as the API's others finds no code or reason
// in. What follows the error (the newline) is left out.
func (s *stallWriter) refusal(b []byte) (int, error) {
	var chunk map[string]json.RawMessage
	if json.Unmarshal(b, &chunk) != nil || len(chunk) != 1 || chunk["error"] == nil {
		if len(bytes.TrimSpace(b)) == 0 {
			return len(b), nil // the delimiter after the error
		}
		return s.ResponseWriter.Write(b) // written whole (errorHandler's)
	}
	if _, err := s.ResponseWriter.Write(chunk["error"]); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (s *stallWriter) Flush() {
	defer s.within()()
	s.headed = true
	_ = s.rc.Flush()
}

func (s *stallWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
