package push_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/core"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/push"
	"github.com/jetgate/jetgate/internal/tracing"
)

// A push is a CLIENT span, child of the message's creation context, and
// the request carries the push span's context: a trace runs publisher,
// jetgate, endpoint.
func TestAPushIsAClientSpanInThePublishersTrace(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	r, err := core.New(context.Background(), core.Options{
		Conn: natstest.Connect(t, e.ns), Consumers: []consumer.Config{consumerCfg()},
		Pushes: []push.Config{{Stream: stream, Consumer: name, URL: rc.URL}}, Keys: keyring, Tracing: tracing.With(tp),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	const publisher = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	e.publish("orders.new", "x", nats.Header{"traceparent": {publisher}})
	p := rc.next(t, 5*time.Second)
	var pushSpan tracetest.SpanStub
	natstest.Eventually(t, 5*time.Second, "the push span", func() bool {
		for _, s := range exp.GetSpans() {
			if s.Name == "push "+stream {
				pushSpan = s
				return true
			}
		}
		return false
	})
	got := tracing.Origin(nats.Header(p.header))
	switch {
	case pushSpan.SpanKind != trace.SpanKindClient:
		t.Fatalf("push span kind %v", pushSpan.SpanKind)
	case pushSpan.Parent.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || pushSpan.Parent.SpanID().String() != "00f067aa0ba902b7":
		t.Fatalf("push span's parent %v; want the publisher's", pushSpan.Parent)
	case got.TraceID() != pushSpan.SpanContext.TraceID() || got.SpanID() != pushSpan.SpanContext.SpanID():
		t.Fatalf("the request carries %q; want the push span %v", p.header.Values("Traceparent"), pushSpan.SpanContext)
	}
}
