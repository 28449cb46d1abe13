package gateway_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jetgate/jetgate/gateway"
)

// A REST call whose gRPC backend cannot be reached answers 503 with the
// gateway's own words: the dial error (with the address in it) stays in the
// log.
func TestRESTHidesBackendErrorText(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens there now

	var logged bytes.Buffer
	h, err := gateway.New(context.Background(), gateway.Options{
		GRPCAddr:     addr,
		MaxBodyBytes: 1 << 20,
		Logger:       slog.New(slog.NewTextHandler(&logged, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	resp, err := http.Post(srv.URL+consumerPath+":fetch", "application/json", strings.NewReader(`{"expires":"0s"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d, body %s; want 503", resp.StatusCode, body)
	}
	const fixed = "the jetgate service is unavailable; retry"
	if !strings.Contains(string(body), fixed) {
		t.Errorf("body %s does not carry the fixed text %q", body, fixed)
	}
	_, port, _ := net.SplitHostPort(addr)
	for _, leak := range []string{port, "dial", "connection refused", "127.0.0.1"} {
		if strings.Contains(string(body), leak) {
			t.Errorf("body %s passes on backend detail %q", body, leak)
		}
	}
	if !strings.Contains(logged.String(), "gRPC backend error") {
		t.Errorf("the backend error was not logged: %s", logged.String())
	}
}
