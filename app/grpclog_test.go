package app_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/jetgate/jetgate/app"
)

// What gRPC and grpc-gateway log comes out in the gateway's own structured
// form: their errors as errors, their info and warnings only at debug, as
// gRPC's own logger hides them by default.
func TestGRPCsLogLinesAreTheGatewaysOwn(t *testing.T) {
	var out bytes.Buffer
	g := app.GRPCLogger(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo})))
	g.Errorf("Failed to send response chunk: %v", "write: connection reset by peer")
	g.Warningf("a warning")
	g.Info("some info")
	if g.V(0) {
		t.Error("V(0) at info level; want false (gRPC's info is debug)")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("logged %d lines at info level, want the error alone:\n%s", len(lines), out.String())
	}
	want := `level=ERROR msg="Failed to send response chunk: write: connection reset by peer" from=grpc`
	if !strings.Contains(lines[0], want) {
		t.Errorf("logged %q; want it to hold %q", lines[0], want)
	}

	out.Reset()
	g = app.GRPCLogger(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})))
	g.Warningln("a warning")
	if !g.V(0) || g.V(2) {
		t.Errorf("V(0) %v, V(2) %v at debug; want true, false", g.V(0), g.V(2))
	}
	if !strings.Contains(out.String(), `level=DEBUG msg="a warning" from=grpc`) {
		t.Errorf("a warning at debug level logged %q", out.String())
	}
}
