package app

import (
	"testing"
	"time"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// --js-domain: a jetgate connected to a leaf node creates its consumer in
// the hub's JetStream and serves it, Publish included (the leaf forwards
// the stream's subjects to the hub).
func TestJetStreamDomainThroughALeafNode(t *testing.T) {
	hub, leaf := natstest.StartHubAndLeaf(t, "hub", "leaf")
	natstest.Stream(t, natstest.Connect(t, hub), "ORDERS", "orders.>")
	o := testOptions(t)
	o.NATSURL, o.JSDomain, o.NATSListen = leaf.ClientURL(), "hub", ""
	p := start(t, o)
	cc, sc := grpcClients(t, p.GRPC)
	seq := publish(t, sc, "orders.new", "through the leaf")
	msgs := fetch(t, cc, "billing", 1, 5*time.Second)
	if len(msgs) != 1 || msgs[0].GetMetadata().GetStreamSeq() != seq {
		t.Fatalf("fetched %v; want the message published through the leaf", msgs)
	}
	resp, err := cc.Ack(ctxT(t), &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "billing", Tokens: []string{msgs[0].GetToken()}})
	if err != nil || len(resp.GetFailures()) != 0 {
		t.Fatalf("ack: %v %v", resp, err)
	}
	if ci := consumerInfo(t, hub.ClientURL(), "ORDERS", "billing"); ci.AckFloor.Stream != seq {
		t.Fatalf("the hub's consumer's ack floor %d; want %d", ci.AckFloor.Stream, seq)
	}
}
