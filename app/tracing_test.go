package app

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/tracing"
)

// A caller's trace, as its traceparent says.
const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
	callerTP    = "00-" + callerTrace + "-" + callerSpan + "-01"
)

// traced runs a process whose spans go to an in-memory exporter.
func traced(t *testing.T) (*Process, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	o := testOptions(t)
	o.TracerProvider = tp
	return start(t, o), exp
}

// span is the one ended span named name; it fails the test if there is
// none within a few seconds (servers end theirs after answering).
func span(t *testing.T, exp *tracetest.InMemoryExporter, name string) tracetest.SpanStub {
	t.Helper()
	var got []tracetest.SpanStub
	natstest.Eventually(t, 5*time.Second, "span "+name, func() bool {
		got = got[:0]
		for _, s := range exp.GetSpans() {
			if s.Name == name {
				got = append(got, s)
			}
		}
		return len(got) > 0
	})
	if len(got) != 1 {
		t.Fatalf("%d spans named %s", len(got), name)
	}
	return got[0]
}

func attr(s tracetest.SpanStub, key string) string {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}

func linkedTo(s tracetest.SpanStub, sc trace.SpanContext) bool {
	for _, l := range s.Links {
		if l.SpanContext.TraceID() == sc.TraceID() && l.SpanContext.SpanID() == sc.SpanID() {
			return true
		}
	}
	return false
}

// The trace of a message through jetgate: a gRPC Publish in the caller's
// trace has otelgrpc's SERVER span and jetgate's PRODUCER span under it,
// whose context the stored message carries; a REST Fetch in another trace
// has otelhttp's server span and, in its trace (under the gRPC hop every REST
// call takes), a receive span linked to that context; an
// Ack's settle span is linked to it too.
func TestSpansFromPublishToAck(t *testing.T) {
	p, exp := traced(t)
	cc, sc := grpcClients(t, p.GRPC)
	ctx := metadata.AppendToOutgoingContext(ctxT(t), "traceparent", callerTP)
	if _, err := sc.Publish(ctx, &jetgatev1.PublishRequest{Stream: "ORDERS", Subject: "orders.traced", Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	server := span(t, exp, "jetgate.v1.StreamService/Publish")
	producer := span(t, exp, "publish orders.traced")
	switch {
	case server.SpanKind != trace.SpanKindServer || server.Parent.TraceID().String() != callerTrace || server.Parent.SpanID().String() != callerSpan:
		t.Fatalf("server span %v, parent %v", server.SpanKind, server.Parent)
	case producer.SpanKind != trace.SpanKindProducer || producer.Parent.SpanID() != server.SpanContext.SpanID():
		t.Fatalf("producer span %v, parent %v", producer.SpanKind, producer.Parent)
	case attr(producer, "messaging.system") != "nats" || attr(producer, "messaging.destination.name") != "orders.traced" || attr(producer, "messaging.operation.type") != "send":
		t.Fatalf("producer attributes %v", producer.Attributes)
	}
	// The message carries the PRODUCER span's context.
	raw := lastMsg(t, p, "orders.traced")
	if origin := tracing.Origin(raw.Header); origin.SpanID() != producer.SpanContext.SpanID() || origin.TraceID().String() != callerTrace {
		t.Fatalf("the message carries %v; want the producer span %v", raw.Header, producer.SpanContext)
	}

	req, _ := http.NewRequest(http.MethodPost, "http://"+p.HTTP+"/v1/streams/ORDERS/consumers/billing:fetch", strings.NewReader(`{"batch":1,"expires":"2s"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-11111111111111111111111111111111-2222222222222222-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"token"`) {
		t.Fatalf("REST fetch: %s %s", resp.Status, body)
	}
	httpSpan := span(t, exp, "POST /v1/streams/{stream}/consumers/{consumer}:fetch")
	receive := span(t, exp, "receive ORDERS")
	switch {
	case httpSpan.SpanKind != trace.SpanKindServer || httpSpan.Parent.TraceID().String() != "11111111111111111111111111111111":
		t.Fatalf("http span %v, parent %v", httpSpan.SpanKind, httpSpan.Parent)
	case attr(httpSpan, "http.route") != "/v1/streams/{stream}/consumers/{consumer}:fetch":
		t.Fatalf("http span's route %q", attr(httpSpan, "http.route"))
	case receive.Parent.TraceID() != httpSpan.SpanContext.TraceID() || !linkedTo(receive, producer.SpanContext):
		t.Fatalf("receive span: parent %v, links %v", receive.Parent, receive.Links)
	case attr(receive, "messaging.consumer.group.name") != "billing" || attr(receive, "messaging.batch.message_count") != "1":
		t.Fatalf("receive attributes %v", receive.Attributes)
	}

	msgs := fetchAfterPublish(t, cc, sc)
	if _, err := cc.Ack(ctxT(t), &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "billing", Tokens: []string{msgs[0].GetToken()}}); err != nil {
		t.Fatal(err)
	}
	ack := span(t, exp, "ack ORDERS")
	second := span(t, exp, "publish orders.second")
	if ack.SpanKind != trace.SpanKindClient || !linkedTo(ack, second.SpanContext) || attr(ack, "messaging.operation.type") != "settle" {
		t.Fatalf("ack span %v links %v attributes %v", ack.SpanKind, ack.Links, ack.Attributes)
	}
}

// lastMsg is the last message stored on subject of ORDERS.
func lastMsg(t *testing.T, p *Process, subject string) *jetstream.RawStreamMsg {
	t.Helper()
	nc, err := nats.Connect(p.NATS)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	s, err := js.Stream(ctxT(t), "ORDERS")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := s.GetLastMsgForSubject(ctxT(t), subject)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// fetchAfterPublish publishes one more message (untraced caller) and
// fetches it over gRPC.
func fetchAfterPublish(t *testing.T, cc jetgatev1.ConsumerServiceClient, sc jetgatev1.StreamServiceClient) []*jetgatev1.Message {
	t.Helper()
	publish(t, sc, "orders.second", "y")
	r, err := cc.Fetch(ctxT(t), &jetgatev1.FetchRequest{Stream: "ORDERS", Consumer: "billing", Batch: 1, Expires: durationpb.New(2 * time.Second)})
	if err != nil || len(r.GetMessages()) != 1 {
		t.Fatalf("fetch: %v %v", r, err)
	}
	return r.GetMessages()
}

// A publisher's own traceparent header on the message is kept as given.
func TestAPublishersOwnTraceparentIsKept(t *testing.T) {
	p, _ := traced(t)
	_, sc := grpcClients(t, p.GRPC)
	own := "00-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-bbbbbbbbbbbbbbbb-01"
	if _, err := sc.Publish(ctxT(t), &jetgatev1.PublishRequest{Stream: "ORDERS", Subject: "orders.own", Data: []byte("x"),
		Headers: map[string]*jetgatev1.HeaderValues{"traceparent": {Values: []string{own}}}}); err != nil {
		t.Fatal(err)
	}
	raw := lastMsg(t, p, "orders.own")
	if got := raw.Header.Values("traceparent"); len(got) != 1 || got[0] != own {
		t.Fatalf("traceparent %v; want [%s]", got, own)
	}
}

// Through the real exporter, as the README sets it up: OTLP over HTTP to
// a receiver, configured by the OTEL_* variables alone. The receiver gets
// the publisher's trace with jetgate's PRODUCER span, and the Fetch's
// trace with a receive span linked to it.
func TestSpansReachAnOTLPReceiver(t *testing.T) {
	got := make(chan *coltracepb.ExportTraceServiceRequest, 100)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		got <- &req
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	t.Cleanup(rc.Close)
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL)
	t.Setenv("OTEL_SERVICE_NAME", "jetgate-test")
	p := start(t, testOptions(t))
	cc, sc := grpcClients(t, p.GRPC)
	ctx := metadata.AppendToOutgoingContext(ctxT(t), "traceparent", callerTP)
	if _, err := sc.Publish(ctx, &jetgatev1.PublishRequest{Stream: "ORDERS", Subject: "orders.otlp", Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	fetch(t, cc, "billing", 1, 2*time.Second)
	if err := p.Stop(); err != nil { // flushes the spans
		t.Fatal(err)
	}
	var producer, receive *tracepb.Span
	var service string
	for len(got) > 0 {
		for _, rs := range (<-got).GetResourceSpans() {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.GetKey() == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					switch s.GetName() {
					case "publish orders.otlp":
						producer = s
					case "receive ORDERS":
						receive = s
					}
				}
			}
		}
	}
	switch {
	case producer == nil || receive == nil:
		t.Fatalf("the receiver got producer %v, receive %v", producer, receive)
	case service != "jetgate-test":
		t.Fatalf("service.name %q", service)
	case fmt.Sprintf("%x", producer.GetTraceId()) != callerTrace || producer.GetKind() != tracepb.Span_SPAN_KIND_PRODUCER:
		t.Fatalf("producer span: trace %x kind %v", producer.GetTraceId(), producer.GetKind())
	case len(receive.GetLinks()) != 1 || !bytes.Equal(receive.GetLinks()[0].GetSpanId(), producer.GetSpanId()):
		t.Fatalf("receive span links %v; want the producer span %x", receive.GetLinks(), producer.GetSpanId())
	}
}

// A dead-letter copy, and the message Redrive puts back, keep the
// original's trace context; a Consume burst has its receive span.
func TestDeadLettersAndRedriveKeepTheTraceContext(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	o := fileOptions(t, writeConfig(t, `
streams: [{name: ORDERS, subjects: ["orders.>"]}, {name: DEAD, subjects: ["dead.>"]}]
consumers:
  - {stream: ORDERS, name: billing, dead_letter: {subject: dead.billing, on_term: true}}
`))
	o.TracerProvider = tp
	p := start(t, o)
	cc, sc := grpcClients(t, p.GRPC)
	ctx := metadata.AppendToOutgoingContext(ctxT(t), "traceparent", callerTP)
	if _, err := sc.Publish(ctx, &jetgatev1.PublishRequest{Stream: "ORDERS", Subject: "orders.dl", Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	producer := span(t, exp, "publish orders.dl")
	st, err := cc.Consume(ctxT(t), &jetgatev1.ConsumeRequest{Stream: "ORDERS", Consumer: "billing", MaxMessages: 1})
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.Recv()
	if err != nil || len(r.GetMessages()) != 1 {
		t.Fatalf("consume: %v %v", r, err)
	}
	if rec := span(t, exp, "receive ORDERS"); !linkedTo(rec, producer.SpanContext) {
		t.Fatalf("the Consume burst's span links %v", rec.Links)
	}
	if _, err := cc.Term(ctxT(t), &jetgatev1.TermRequest{Stream: "ORDERS", Consumer: "billing", Tokens: []string{r.GetMessages()[0].GetToken()}}); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(p.NATS)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	same := func(h nats.Header) bool {
		o := tracing.Origin(h)
		return o.TraceID() == producer.SpanContext.TraceID() && o.SpanID() == producer.SpanContext.SpanID()
	}
	var dead []*jetstream.RawStreamMsg
	natstest.Eventually(t, 10*time.Second, "the dead letter", func() bool {
		dead = natstest.StreamMsgs(t, js, "DEAD", "dead.billing")
		return len(dead) == 1
	})
	if !same(dead[0].Header) {
		t.Fatalf("the dead letter's headers %v lost the trace context", dead[0].Header)
	}
	if _, err := cc.Redrive(ctxT(t), &jetgatev1.RedriveRequest{Stream: "ORDERS", Consumer: "billing"}); err != nil {
		t.Fatal(err)
	}
	back := natstest.StreamMsgs(t, js, "ORDERS", "orders.dl")
	if len(back) != 2 || !same(back[1].Header) {
		t.Fatalf("redriven: %d messages, headers %v", len(back), back[len(back)-1].Header)
	}
}
