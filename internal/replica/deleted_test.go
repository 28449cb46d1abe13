package replica_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// A batch of Acks on a consumer of one replica (sent in order, only the last
// one asking a reply) whose consumer was deleted meanwhile is
// CONSUMER_NOT_FOUND for every token: the server's no responders passes
// through the batch, rather than leaving the others unconfirmed
// (NATS_UNAVAILABLE, which a caller would retry for ever).
func TestAcksOfADeletedConsumerOfOneReplicaAreNotFound(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	s := natstest.Stream(t, nc, "ORDERS", "orders.>")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := replicaOf(t, ns, token.RandomKeyring(), replica.Options{Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing", AckWait: time.Minute}}})
	for range 3 {
		if _, err := js.Publish(ctx, "orders.1", []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	res, err := r.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 3, Expires: time.Second})
	if err != nil || len(res.Messages) != 3 {
		t.Fatalf("fetch: %v %v", res, err)
	}
	if err := s.DeleteConsumer(ctx, "billing"); err != nil {
		t.Fatal(err)
	}
	tokens := []string{res.Messages[0].Token, res.Messages[1].Token, res.Messages[2].Token}
	out, err := r.Settle(ctx, settle.Request{Op: lease.OpAck, Stream: "ORDERS", Consumer: "billing", Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range out {
		if !errors.Is(o.Err, errs.ErrConsumerNotFound) {
			t.Errorf("token %d of the batch: %v; want CONSUMER_NOT_FOUND", i, o.Err)
		}
	}
}
