package gateway

import (
	"net/http"
	"strings"
	"time"
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
			w = stallWriter{ResponseWriter: w, rc: http.NewResponseController(w), stall: stall}
			w.(stallWriter).extend()
		}
		next.ServeHTTP(w, r)
	})
}

// stallWriter gives each write of a stream its stall.
type stallWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration
}

func (s stallWriter) extend() { _ = s.rc.SetWriteDeadline(time.Now().Add(s.stall)) }

func (s stallWriter) Write(b []byte) (int, error) {
	s.extend()
	return s.ResponseWriter.Write(b)
}

func (s stallWriter) Flush() {
	s.extend()
	_ = s.rc.Flush()
}

func (s stallWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
