// Package tracing is jetgate's OpenTelemetry tracing (DESIGN.md section
// 12) as the packages that record spans see it: the tracer, off unless the
// process set one up (app reads the OTEL_* variables), the messaging spans,
// and the carrier that puts a trace context into a NATS message's headers
// and takes it out again. It needs the OpenTelemetry API only.
package tracing

import (
	"context"
	"strings"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Tracing is what the process traces with. The zero value is off: no
// exporter, no spans, nothing on the hot path.
type Tracing struct {
	Provider   trace.TracerProvider // nil when off
	Propagator propagation.TextMapPropagator
	shutdown   func(context.Context) error
}

// On reports whether spans are recorded.
func (t *Tracing) On() bool { return t != nil && t.Provider != nil }

// Tracer is jetgate's tracer, nil when off.
func (t *Tracing) Tracer() trace.Tracer {
	if !t.On() {
		return nil
	}
	return t.Provider.Tracer("github.com/jetgate/jetgate")
}

// W3C is the propagation jetgate reads and writes: traceparent and
// tracestate.
var W3C propagation.TextMapPropagator = propagation.TraceContext{}

// With traces through tp (tests give an in-memory exporter's).
func With(tp trace.TracerProvider) *Tracing {
	return &Tracing{Provider: tp, Propagator: W3C, shutdown: func(context.Context) error { return nil }}
}

// New is tracing through tp, whose shutdown sends what it has buffered.
func New(tp trace.TracerProvider, shutdown func(context.Context) error) *Tracing {
	return &Tracing{Provider: tp, Propagator: W3C, shutdown: shutdown}
}

// Shutdown sends what is buffered and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	return t.shutdown(ctx)
}

// Header carries a trace context in a NATS message's headers, under the
// exact W3C names (NATS headers are case-sensitive; a lookup falls back to
// any case, as a publisher may have written Traceparent).
type Header nats.Header

// Get returns the value of key.
func (h Header) Get(key string) string {
	if vs := h[key]; len(vs) > 0 {
		return vs[0]
	}
	for k, vs := range h {
		if strings.EqualFold(k, key) && len(vs) > 0 {
			return vs[0]
		}
	}
	return ""
}

// Set sets key to value.
func (h Header) Set(key, value string) { h[key] = []string{value} }

// Keys lists the keys.
func (h Header) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}

// Origin is the creation context a message's headers carry, if any.
func Origin(h nats.Header) trace.SpanContext {
	if len(h) == 0 {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(W3C.Extract(context.Background(), Header(h)))
}

// Inject writes ctx's span context into h, unless h carries a traceparent
// of its own (a publisher's, kept as given).
func Inject(ctx context.Context, h nats.Header) {
	if Header(h).Get("traceparent") != "" {
		return
	}
	W3C.Inject(ctx, Header(h))
}
