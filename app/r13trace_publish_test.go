package app

import (
	"fmt"
	"testing"

	"google.golang.org/grpc/metadata"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// A publish span names the message it stored, messaging.message.id
// <stream>.<seq>: the id its push span and Webhook-Id have, so that one
// message is found across the traces it is in.
func TestR13TraceAPublishSpanNamesTheMessage(t *testing.T) {
	p, exp := traced(t)
	_, sc := grpcClients(t, p.GRPC)
	ctx := metadata.AppendToOutgoingContext(ctxT(t), "traceparent", callerTP)
	publish(t, sc, "orders.first", "x")
	r, err := sc.Publish(ctx, &jetgatev1.PublishRequest{Stream: "ORDERS", Subject: "orders.id", Data: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	producer := span(t, exp, "publish orders.id")
	if got, want := attr(producer, "messaging.message.id"), fmt.Sprintf("ORDERS.%d", r.GetSeq()); got != want || r.GetSeq() != 2 {
		t.Fatalf("messaging.message.id %q; want %q", got, want)
	}
}
