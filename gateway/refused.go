package gateway

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// tracked follows one request of an API route: whether it became a call of
// the services (whose interceptor chain counts it), and else the code it was
// refused with here (a body, Content-Type or query parameter it could not
// take, its credentials), so that Options.Refused counts it as the chain
// counts a gRPC call: REST and gRPC alike in jetgate_rpc_duration_seconds.
type tracked struct {
	http.ResponseWriter
	called atomic.Bool
	noted  atomic.Bool
	code   atomic.Uint32
}

func (t *tracked) Unwrap() http.ResponseWriter { return t.ResponseWriter }

type trackedKey struct{}

// track counts the requests of API routes refused before the services.
func track(rt routeTable, refused func(method string, code codes.Code, took time.Duration), next http.Handler) http.Handler {
	if refused == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		t := &tracked{ResponseWriter: w}
		next.ServeHTTP(t, r.WithContext(context.WithValue(r.Context(), trackedKey{}, t)))
		if t.called.Load() || !t.noted.Load() {
			return
		}
		if method := rt.rpc(r.URL.Path, r.Method); method != "" { // else no call of the API: 404, 405
			refused(method, codes.Code(t.code.Load()), time.Since(start))
		}
	})
}

// noteRefused records the code a request is answered with here; the
// services' answers, already counted, are left out by track.
func noteRefused(w http.ResponseWriter, c codes.Code) {
	for w != nil {
		if t, ok := w.(*tracked); ok {
			t.code.Store(uint32(c))
			t.noted.Store(true)
			return
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return
		}
		w = u.Unwrap()
	}
}

// calledRoad marks the requests whose call it makes.
type calledRoad struct{ grpc.ClientConnInterface }

func markCalled(ctx context.Context) {
	if t, ok := ctx.Value(trackedKey{}).(*tracked); ok {
		t.called.Store(true)
	}
}

func (c calledRoad) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	markCalled(ctx)
	return c.ClientConnInterface.Invoke(ctx, method, args, reply, opts...)
}

func (c calledRoad) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	markCalled(ctx)
	return c.ClientConnInterface.NewStream(ctx, desc, method, opts...)
}

// Flush flushes what was written, for a streamed answer.
func (t *tracked) Flush() { _ = http.NewResponseController(t.ResponseWriter).Flush() }
