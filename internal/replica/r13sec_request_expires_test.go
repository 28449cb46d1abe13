package replica_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

// A consumer whose max_request_expires is shorter than any pull jetgate
// makes (20ms) cannot be served: the server refuses every pull. Matched on
// demand, every Fetch of it was FAILED_PRECONDITION PULL_REFUSED "see the
// gateway log", which its caller cannot read. It is CONSUMER_NOT_FOUND
// saying why, as a push consumer is.
func TestAConsumerWhosePullsJetgateCannotMakeIsNotServed(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	r := replicaOf(t, ns, token.RandomKeyring(), replica.Options{
		OnDemand: consumer.OnDemand{Match: []consumer.Match{{Stream: "*", Consumer: "*"}}},
	})
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "short", AckPolicy: jetstream.AckExplicitPolicy,
		MaxRequestExpires: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	_, err = r.Fetch(ctx, "ORDERS", "short", consumer.FetchRequest{Batch: 1})
	if !errors.Is(err, errs.ErrConsumerNotFound) || !strings.Contains(err.Error(), "max_request_expires") {
		t.Fatalf("fetch of a consumer with max_request_expires 1ms: %v; want CONSUMER_NOT_FOUND saying why", err)
	}
}
