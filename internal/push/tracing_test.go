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
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/push"
	"github.com/jetgate/jetgate/internal/replica"
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
	r, err := replica.New(context.Background(), replica.Options{
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

// A batch is one span linked to each message's creation context; the
// request's CLIENT span is its child, and the request carries that.
func TestABatchIsASpanLinkedToEachMessage(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	e.replica(consumerCfg(), push.Config{URL: rc.URL, Batch: &push.Batch{MaxMessages: 2, MaxWait: 10 * time.Second}},
		func(o *replica.Options) { o.Tracing = tracing.With(tp) })
	publishers := []string{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
	}
	for _, parent := range publishers {
		e.publish("orders.new", "x", nats.Header{"traceparent": {parent}})
	}
	p := rc.next(t, 10*time.Second)
	var batch, client tracetest.SpanStub
	natstest.Eventually(t, 5*time.Second, "the batch and push spans", func() bool {
		for _, s := range exp.GetSpans() {
			switch s.Name {
			case "push batch " + stream:
				batch = s
			case "push " + stream:
				client = s
			}
		}
		return batch.Name != "" && client.Name != ""
	})
	var links []string
	for _, l := range batch.Links {
		links = append(links, l.SpanContext.TraceID().String()+"-"+l.SpanContext.SpanID().String())
	}
	got := tracing.Origin(nats.Header(p.header))
	switch {
	case len(links) != 2 || links[0] != "4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7" || links[1] != "0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331":
		t.Fatalf("the batch span's links %v; want each publisher's", links)
	case client.SpanKind != trace.SpanKindClient || client.Parent.SpanID() != batch.SpanContext.SpanID():
		t.Fatalf("the push span (%v) is not the batch span's child: parent %v", client.SpanKind, client.Parent)
	case got.SpanID() != client.SpanContext.SpanID():
		t.Fatalf("the request carries %q; want the push span %v", p.header.Values("Traceparent"), client.SpanContext)
	}
}
