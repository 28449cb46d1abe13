package app

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/authtest"
)

// halfCall opens a raw HTTP/2 connection to the gRPC listener, finishes the
// handshake, and starts a unary call (HEADERS without END_STREAM) whose
// request message never comes.
func halfCall(t *testing.T, addr, method string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range []hpack.HeaderField{
		{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"},
		{Name: ":path", Value: method}, {Name: ":authority", Value: "localhost"},
		{Name: "content-type", Value: "application/grpc"}, {Name: "te", Value: "trailers"},
	} {
		_ = enc.WriteField(f)
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	// Half of a gRPC message prefix: the request never completes.
	if err := fr.WriteData(1, false, []byte{0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	return c
}

// readsUntilClosed reads frames, answering pings as any HTTP/2 client does,
// until the server closes the connection or resets stream 1, or d passes.
func readsUntilClosed(c net.Conn, d time.Duration) (closed bool, what string) {
	_ = c.SetDeadline(time.Now().Add(d))
	fr := http2.NewFramer(c, c)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return false, "still open"
			}
			return true, err.Error()
		}
		switch f := f.(type) {
		case *http2.PingFrame:
			if !f.IsAck() {
				_ = fr.WritePing(true, f.Data)
			}
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.RSTStreamFrame:
			return true, "RST_STREAM " + f.ErrCode.String()
		case *http2.GoAwayFrame:
			return true, "GOAWAY " + f.ErrCode.String()
		case *http2.HeadersFrame:
			if f.StreamEnded() {
				return true, "stream answered"
			}
		}
	}
}

// A caller that starts a call and never sends its request held its
// connection, and a slot of max_connections, for as long as it answered
// pings: three such callers, with no credentials, locked everyone else out
// of a listener of max_connections 3. The call ends once idle_timeout (1s
// here, 10s at most) passes without its request, and the idle connection
// is closed after it.
func TestACallWhoseRequestNeverComesIsEnded(t *testing.T) {
	for _, tc := range []struct{ name, auth, method string }{
		{"the open Health service", "auth: {allow_unauthenticated: true}", "/grpc.health.v1.Health/Check"},
		{"auth on, no credentials", "auth: {api_keys: [{principal: svc, sha256: " + authtest.KeyHash("k") + "}], grants: [{principal: svc, stream: ORDERS, consumers: [billing], actions: [fetch]}]}",
			"/jetgate.v1.ConsumerService/Fetch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeConfig(t, `
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers: [{stream: ORDERS, name: billing}]
`+tc.auth+`
limits: {idle_timeout: 1s, max_connections: 3}
`)
			p := start(t, fileOptions(t, file))
			var held []net.Conn
			for range 3 {
				held = append(held, halfCall(t, p.GRPC, tc.method))
			}
			for i, c := range held {
				if closed, what := readsUntilClosed(c, 30*time.Second); !closed {
					t.Fatalf("half-sent call %d: %s after 30s (idle_timeout 1s)", i, what)
				}
			}
			for i, c := range held {
				if !closedWithin(c, 30*time.Second) {
					t.Fatalf("connection %d of an ended half-sent call still open after 30s (idle_timeout 1s)", i)
				}
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if _, err := healthpb.NewHealthClient(grpcConn(t, p.GRPC)).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
				t.Fatalf("a Health check once the half-sent calls were ended: %v", err)
			}
		})
	}
}

// A call whose request came in time is not ended by the bound, however
// long it lasts: a Consume stream's heartbeats, 300ms apart, go on past
// idle_timeout (1s) several times over.
func TestACallWhoseRequestCameOutlivesTheBound(t *testing.T) {
	p := limitedConfig(t)
	cons, _ := grpcClients(t, p.GRPC)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st, err := cons.Consume(ctx, &jetgatev1.ConsumeRequest{Stream: "ORDERS", Consumer: "billing", Heartbeat: durationpb.New(300 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	for beats := 0; beats < 10; {
		r, err := st.Recv()
		if err != nil {
			t.Fatalf("the stream ended %v in, after %d heartbeats: %v", time.Since(began), beats, err)
		}
		if len(r.GetMessages()) == 0 {
			beats++
		}
	}
}
