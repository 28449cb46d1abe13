package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"google.golang.org/grpc/grpclog"
)

// GRPCLogger is a grpclog.LoggerV2 that writes to log, so that what gRPC
// and grpc-gateway log (a REST Consume's caller gone mid-write: "Failed to
// send response chunk") comes out structured with the rest, not as bare
// "ERROR:" lines. As gRPC's own logger by default, only its errors are
// shown at the usual levels: its info and warnings are log's debug. For
// main (grpclog.SetLoggerV2 is process-wide, and not to be changed while
// gRPC runs).
func GRPCLogger(log *slog.Logger) grpclog.LoggerV2 {
	return grpcLog{log.With("from", "grpc")}
}

type grpcLog struct{ log *slog.Logger }

func (g grpcLog) put(level slog.Level, msg string) {
	g.log.Log(context.Background(), level, strings.TrimSpace(msg))
}

func (g grpcLog) Info(args ...any)   { g.put(slog.LevelDebug, fmt.Sprint(args...)) }
func (g grpcLog) Infoln(args ...any) { g.put(slog.LevelDebug, fmt.Sprintln(args...)) }
func (g grpcLog) Infof(format string, args ...any) {
	g.put(slog.LevelDebug, fmt.Sprintf(format, args...))
}
func (g grpcLog) Warning(args ...any)   { g.put(slog.LevelDebug, fmt.Sprint(args...)) }
func (g grpcLog) Warningln(args ...any) { g.put(slog.LevelDebug, fmt.Sprintln(args...)) }
func (g grpcLog) Warningf(format string, args ...any) {
	g.put(slog.LevelDebug, fmt.Sprintf(format, args...))
}
func (g grpcLog) Error(args ...any)   { g.put(slog.LevelError, fmt.Sprint(args...)) }
func (g grpcLog) Errorln(args ...any) { g.put(slog.LevelError, fmt.Sprintln(args...)) }
func (g grpcLog) Errorf(format string, args ...any) {
	g.put(slog.LevelError, fmt.Sprintf(format, args...))
}
func (g grpcLog) Fatal(args ...any)   { g.put(slog.LevelError, fmt.Sprint(args...)); os.Exit(1) }
func (g grpcLog) Fatalln(args ...any) { g.put(slog.LevelError, fmt.Sprintln(args...)); os.Exit(1) }
func (g grpcLog) Fatalf(format string, args ...any) {
	g.put(slog.LevelError, fmt.Sprintf(format, args...))
	os.Exit(1)
}

// V reports whether verbosity level l is logged: level 0 while log shows
// debug.
func (g grpcLog) V(l int) bool {
	return l <= 0 && g.log.Enabled(context.Background(), slog.LevelDebug)
}
