package app

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// serverSpans are the ended SERVER spans of trace id.
func serverSpans(exp *tracetest.InMemoryExporter, id string) []string {
	var names []string
	for _, s := range exp.GetSpans() {
		if s.SpanKind == trace.SpanKindServer && s.SpanContext.TraceID().String() == id {
			names = append(names, s.Name)
		}
	}
	return names
}

// A REST Consume is one call, so one SERVER span, as a REST Fetch is: its
// receive span is the HTTP server span's child, not that of a second, gRPC
// server span of jetgate's in-process hop. A gRPC Consume has otelgrpc's.
func TestR13TraceRESTConsumeHasOneServerSpan(t *testing.T) {
	p, exp := traced(t)
	cc, sc := grpcClients(t, p.GRPC)
	publish(t, sc, "orders.c", "x")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+p.HTTP+"/v1/streams/ORDERS/consumers/billing:consume", strings.NewReader(`{"maxMessages":1}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", callerTP)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, `"token"`) {
		t.Fatalf("REST consume: %s %q %v", resp.Status, line, err)
	}
	cancel()
	resp.Body.Close()
	httpSpan := span(t, exp, "POST /v1/streams/{stream}/consumers/{consumer}:consume")
	receive := span(t, exp, "receive ORDERS")
	if receive.Parent.SpanID() != httpSpan.SpanContext.SpanID() {
		t.Fatalf("the receive span's parent is %v, not the HTTP server span %v; server spans of the call: %v",
			receive.Parent.SpanID(), httpSpan.SpanContext.SpanID(), serverSpans(exp, callerTrace))
	}
	if got := serverSpans(exp, callerTrace); len(got) != 1 {
		t.Fatalf("one REST Consume made server spans %v", got)
	}
	for _, s := range exp.GetSpans() {
		if s.SpanContext.TraceID().String() == callerTrace && strings.HasPrefix(s.Name, "jetgate.v1.") {
			t.Fatalf("a REST call made the gRPC span %s (%v)", s.Name, s.SpanKind)
		}
	}

	// Over gRPC: otelgrpc's one SERVER span, the receive span its child.
	exp.Reset()
	publish(t, sc, "orders.c", "y")
	gctx, gcancel := context.WithCancel(metadata.AppendToOutgoingContext(ctxT(t), "traceparent", callerTP))
	st, err := cc.Consume(gctx, &jetgatev1.ConsumeRequest{Stream: "ORDERS", Consumer: "billing", MaxMessages: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := st.Recv(); err != nil || len(r.GetMessages()) != 1 {
		t.Fatalf("gRPC consume: %v %v", r, err)
	}
	gcancel()
	server := span(t, exp, "jetgate.v1.ConsumerService/Consume")
	receive = span(t, exp, "receive ORDERS")
	if server.SpanKind != trace.SpanKindServer || server.Parent.SpanID().String() != callerSpan || receive.Parent.SpanID() != server.SpanContext.SpanID() {
		t.Fatalf("gRPC: server span %v parent %v, receive's parent %v", server.SpanKind, server.Parent, receive.Parent)
	}
	natstest.Eventually(t, 5*time.Second, "one server span", func() bool { return len(serverSpans(exp, callerTrace)) == 1 })
}
