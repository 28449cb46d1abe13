package app

import (
	"testing"

	"go.opentelemetry.io/otel/codes"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// A settle whose every token failed is an error on its span, as a failed
// Fetch or Publish is; a failed token is counted on it. The RPC itself
// succeeds (its outcomes list the failure), so no other span shows it.
func TestR13TraceAFailedSettleIsAnErrorOnItsSpan(t *testing.T) {
	p, exp := traced(t)
	cc, sc := grpcClients(t, p.GRPC)
	msgs := fetchAfterPublish(t, cc, sc)
	ack := &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "billing", Tokens: []string{msgs[0].GetToken()}}
	if _, err := cc.Ack(ctxT(t), ack); err != nil {
		t.Fatal(err)
	}
	if first := span(t, exp, "ack ORDERS"); first.Status.Code == codes.Error || attr(first, "jetgate.settle.failures") != "" {
		t.Fatalf("an ack that worked: status %v, attributes %v", first.Status, first.Attributes)
	}
	exp.Reset()
	ext := &jetgatev1.ExtendRequest{Stream: "ORDERS", Consumer: "billing", Tokens: ack.Tokens}
	r, err := cc.Extend(ctxT(t), ext) // the lease is gone
	if err != nil || len(r.GetFailures()) != 1 {
		t.Fatalf("extend after ack: %v %v", r, err)
	}
	again := span(t, exp, "extend ORDERS")
	if again.Status.Code != codes.Error || attr(again, "jetgate.settle.failures") != "1" {
		t.Fatalf("an extend whose token failed (%v): span status %v, attributes %v", r.GetFailures()[0], again.Status, again.Attributes)
	}
}
