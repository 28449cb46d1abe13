package app

import (
	"testing"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
)

// A probe records no span, over gRPC (grpc.health.v1) as over REST
// (/healthz, /readyz): a load balancer's or kubelet's checks every few
// seconds are not traces.
func TestR13TraceAGRPCHealthCheckRecordsNoSpan(t *testing.T) {
	p, exp := traced(t)
	_, sc := grpcClients(t, p.GRPC)
	ctx := metadata.AppendToOutgoingContext(ctxT(t), "traceparent", callerTP)
	if r, err := healthpb.NewHealthClient(grpcConn(t, p.GRPC)).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v %v", r, err)
	}
	publish(t, sc, "orders.after", "x") // ends after the check did
	span(t, exp, "jetgate.v1.StreamService/Publish")
	for _, s := range exp.GetSpans() {
		if s.Name == "grpc.health.v1.Health/Check" {
			t.Fatalf("a health check made the span %s (%v)", s.Name, s.SpanKind)
		}
	}
}
