package server_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// An operator cuts ack_wait under a lease, and its holder then extends it:
// the Extend's new token, dated by the shorter wait, comes before the
// first token's deadline, and must still name the lease.
func TestAnExtendAfterAShorterAckWaitGivesAGoodToken(t *testing.T) {
	o := newOperated(t, jetstream.ConsumerConfig{Durable: "ops", AckWait: time.Minute}, 1)
	o.publish(1)
	c := o.replicas[0]
	r, err := o.fetch(t, c, &jetgatev1.FetchRequest{Batch: 1})
	if err != nil || len(r.GetMessages()) != 1 {
		t.Fatalf("fetch: %v %v", r, err)
	}
	tok := r.GetMessages()[0].GetToken()
	cfg := jetstream.ConsumerConfig{Durable: "ops", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 5 * time.Second}
	if _, err := o.js.UpdateConsumer(o.ctx(), stream, cfg); err != nil {
		t.Fatalf("operator's update: %v", err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		e, err := c.Extend(o.ctx(), &jetgatev1.ExtendRequest{Stream: stream, Consumer: "ops", Tokens: []string{tok}})
		if err != nil || len(e.GetFailures()) != 0 {
			t.Fatalf("extend: %v %v", err, e.GetFailures())
		}
		l := e.GetLeases()[0]
		tok = l.GetNewToken()
		if time.Until(l.GetLeaseDeadline().AsTime()) < 10*time.Second {
			break // dated by the new ack_wait
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Extend still dates the lease by the old ack_wait: %v away", time.Until(l.GetLeaseDeadline().AsTime()))
		}
	}
	a, err := c.Ack(o.ctx(), &jetgatev1.AckRequest{Stream: stream, Consumer: "ops", Tokens: []string{tok}})
	if err != nil || len(a.GetFailures()) != 0 {
		t.Fatalf("ack with the Extend's token: %v %v", err, a.GetFailures())
	}
}
