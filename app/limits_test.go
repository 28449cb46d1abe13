package app

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// A gRPC caller is bounded as a REST one is: a request larger than a REST
// body may be is refused with RESOURCE_EXHAUSTED before any service reads
// it, and the process goes on serving, on the same connection too.
func TestGRPCRequestsAreBoundedLikeRESTBodies(t *testing.T) {
	o := testOptions(t)
	o.MaxBodyBytes = 1024
	p := start(t, o)
	cc, sc := grpcClients(t, p.GRPC)
	ack := func(tokenLen int) (*jetgatev1.AckResponse, error) {
		return cc.Ack(ctxT(t), &jetgatev1.AckRequest{
			Stream: "ORDERS", Consumer: "billing", Tokens: []string{strings.Repeat("t", tokenLen)},
		})
	}

	_, err := ack(16 << 10)
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("Ack of 16 KiB with a 1 KiB body limit: %v; want ResourceExhausted", err)
	}

	// What a REST body within the limit becomes still passes: the one
	// made-up token fails on its own.
	resp, err := ack(1000)
	if err != nil {
		t.Fatalf("Ack of 1000 bytes: %v", err)
	}
	if f := resp.GetFailures(); len(f) != 1 || f[0].GetReason() != "TOKEN_INVALID" {
		t.Errorf("failures %v; want one TOKEN_INVALID", f)
	}
	publish(t, sc, "orders.new", "x")
	msgs := fetch(t, cc, "billing", 1, time.Second)
	if len(msgs) != 1 {
		t.Fatalf("fetched %d messages after the refused request; want 1", len(msgs))
	}
	resp, err = cc.Ack(ctxT(t), &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "billing", Tokens: []string{msgs[0].GetToken()}})
	if err != nil || len(resp.GetFailures()) != 0 {
		t.Fatalf("Ack after the refused request: %v %v", resp, err)
	}
}
