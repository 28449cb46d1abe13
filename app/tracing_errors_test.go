package app

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
)

// An exporter jetgate does not have is named, with what to use instead.
func TestUnknownExporterIsNamed(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "jaeger")
	err := runErr(t, testOptions(t))
	if err == nil || !strings.Contains(err.Error(), `OTEL_TRACES_EXPORTER "jaeger"`) || !strings.Contains(err.Error(), "otlp") {
		t.Fatalf("error %v; want it to name \"jaeger\" and say otlp", err)
	}
}

// OpenTelemetry's own errors (a failed export) reach the structured log.
func TestOpenTelemetryErrorsGoToTheLog(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	var logs syncBuffer
	o := testOptions(t)
	o.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	p := start(t, o)
	otel.Handle(errors.New("traces export: connection refused"))
	if logs.count(`"level":"WARN"`, `"msg":"OpenTelemetry"`, `"err":"traces export: connection refused"`) != 1 {
		t.Fatal("the OpenTelemetry error is not in the log as a WARN record")
	}
	_ = p.Stop()
}
