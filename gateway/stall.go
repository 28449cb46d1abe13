package gateway

import (
	"context"
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
			s.extend()
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
}

func (s *stallWriter) extend() { _ = s.rc.SetWriteDeadline(time.Now().Add(s.stall)) }

func (s *stallWriter) WriteHeader(code int) {
	if !s.headed {
		s.headed = true
		s.ResponseWriter.WriteHeader(code)
	}
}

func (s *stallWriter) Write(b []byte) (int, error) {
	s.extend()
	s.headed = true
	return s.ResponseWriter.Write(b)
}

func (s *stallWriter) Flush() {
	s.extend()
	s.headed = true
	_ = s.rc.Flush()
}

func (s *stallWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
