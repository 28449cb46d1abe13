package tracing

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// A message's trace context is read under any case of its name, and a
// publisher's own traceparent is never overwritten.
func TestTheHeaderCarrier(t *testing.T) {
	for _, key := range []string{"traceparent", "Traceparent", "TRACEPARENT"} {
		if o := Origin(nats.Header{key: {tp}}); o.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || o.SpanID().String() != "00f067aa0ba902b7" {
			t.Errorf("%s: origin %v", key, o)
		}
	}
	if o := Origin(nil); o.IsValid() {
		t.Errorf("no headers: %v", o)
	}
	exp := tracetest.NewInMemoryExporter()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx, span := With(provider).Spans().Publish(context.Background(), "ORDERS", "orders.x", 1)
	h := nats.Header{}
	Inject(ctx, h)
	if got := Origin(h); got.SpanID() != span.span.SpanContext().SpanID() || h.Get("traceparent") == "" {
		t.Errorf("injected %v", h)
	}
	own := nats.Header{"Traceparent": {tp}}
	Inject(ctx, own)
	if len(own) != 1 || own.Get("Traceparent") != tp {
		t.Errorf("a publisher's own traceparent was changed: %v", own)
	}
	span.End(nil)
	if len(exp.GetSpans()) != 1 {
		t.Errorf("%d spans", len(exp.GetSpans()))
	}
}

// Off, nothing is started and nothing allocated.
func TestOffAllocatesNothing(t *testing.T) {
	var off *Tracing
	s := off.Spans()
	allocs := testing.AllocsPerRun(100, func() {
		ctx, p := s.Publish(context.Background(), "ORDERS", "orders.x", 1)
		p.End(nil)
		r := s.Receive(ctx, "ORDERS", "billing")
		r.Link(1, nil)
		r.End(nil)
	})
	if allocs != 0 || off.On() || s != nil {
		t.Fatalf("off: %v allocations a run", allocs)
	}
}
