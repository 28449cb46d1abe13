package push_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/push"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/tracing"
)

// A push span follows the messaging semantic conventions as DESIGN names
// them: the system, the stream, the consumer, and the message it pushes
// (its Webhook-Id, <stream>.<stream_seq>, which the publish span names too).
func TestR13TraceAPushSpanNamesTheMessage(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	e.replica(consumerCfg(), push.Config{URL: rc.URL}, func(o *replica.Options) { o.Tracing = tracing.With(tp) })
	e.publish("orders.new", "x", nats.Header{"traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})
	p := rc.next(t, 5*time.Second)
	var s tracetest.SpanStub
	natstest.Eventually(t, 5*time.Second, "the push span", func() bool {
		for _, x := range exp.GetSpans() {
			if x.Name == "push "+stream {
				s = x
				return true
			}
		}
		return false
	})
	got := map[string]string{}
	for _, a := range s.Attributes {
		got[string(a.Key)] = a.Value.String()
	}
	want := map[string]string{
		"messaging.system": "nats", "messaging.destination.name": stream, "messaging.consumer.group.name": name,
		"messaging.message.id": p.header.Get("Webhook-Id"),
	}
	for k, v := range want {
		if got[k] != v || v == "" {
			t.Errorf("%s = %q; want %q", k, got[k], v)
		}
	}
}

// A batch's request span has the messaging attributes but names no one
// message: its Webhook-Id is the batch's.
func TestR13TraceABatchRequestSpanNamesNoMessage(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	e.replica(consumerCfg(), push.Config{URL: rc.URL, Batch: &push.Batch{MaxMessages: 2, MaxWait: 10 * time.Second}},
		func(o *replica.Options) { o.Tracing = tracing.With(tp) })
	e.publish("orders.new", "x", nil)
	e.publish("orders.new", "y", nil)
	rc.next(t, 10*time.Second)
	var s tracetest.SpanStub
	natstest.Eventually(t, 5*time.Second, "the request span", func() bool {
		for _, x := range exp.GetSpans() {
			if x.Name == "push "+stream {
				s = x
				return true
			}
		}
		return false
	})
	for _, a := range s.Attributes {
		if a.Key == "messaging.message.id" {
			t.Fatalf("a batch's request span names the message %q", a.Value.String())
		}
	}
}
