package replica_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

// syncBuffer is a log sink safe for the replica's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// With the catch-all on_demand pattern, jetgate's own streams stay out of
// reach: a consumer of the roster's KV bucket or of the dead-letter
// advisories answers CONSUMER_NOT_FOUND to a fetch, a pause and an info. A
// push consumer that matches is CONSUMER_NOT_FOUND saying why (not
// UNAVAILABLE, which clients retry forever), logged once however often it
// is called.
func TestOnDemandServesNeitherJetgatesOwnNorPushConsumers(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	natstest.Stream(t, nc, "JETGATE_ADVISORIES", "advisories.test")
	var logs syncBuffer
	r := replicaOf(t, ns, token.RandomKeyring(), replica.Options{
		OnDemand: consumer.OnDemand{Match: []consumer.Match{{Stream: "*", Consumer: "*"}}},
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
	})
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, stream := range []string{"JETGATE_ADVISORIES", "KV_jetgate_members"} {
		if _, err := js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: "jetgate_deadletters", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Fetch(ctx, stream, "jetgate_deadletters", consumer.FetchRequest{Batch: 1}); !errors.Is(err, errs.ErrConsumerNotFound) {
			t.Fatalf("fetch of %s's consumer: %v; want CONSUMER_NOT_FOUND", stream, err)
		}
		if _, _, err := r.Pause(ctx, stream, "jetgate_deadletters", time.Now().Add(time.Hour)); !errors.Is(err, errs.ErrConsumerNotFound) {
			t.Fatalf("pause of %s's consumer: %v; want CONSUMER_NOT_FOUND", stream, err)
		}
		if _, err := r.Consumer(ctx, stream, "jetgate_deadletters"); !errors.Is(err, errs.ErrConsumerNotFound) {
			t.Fatalf("info of %s's consumer: %v; want CONSUMER_NOT_FOUND", stream, err)
		}
	}
	if ci, err := js.Consumer(ctx, "JETGATE_ADVISORIES", "jetgate_deadletters"); err != nil || ci.CachedInfo().Paused {
		t.Fatalf("the advisories' consumer: %v %v; want it there, not paused", ci, err)
	}

	if _, err := nc.Request("$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.pushed",
		[]byte(`{"stream_name":"ORDERS","config":{"durable_name":"pushed","deliver_subject":"push.here","ack_policy":"explicit"}}`), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, err := r.Fetch(ctx, "ORDERS", "pushed", consumer.FetchRequest{Batch: 1})
		if !errors.Is(err, errs.ErrConsumerNotFound) || !strings.Contains(err.Error(), "push consumer") {
			t.Fatalf("fetch of a push consumer: %v; want CONSUMER_NOT_FOUND saying it is a push consumer", err)
		}
	}
	if n := strings.Count(logs.String(), "jetgate cannot serve it"); n != 1 {
		t.Fatalf("the push consumer's refusal logged %d times; want once:\n%s", n, logs.String())
	}
}

// A caller who may see none of a stream's consumers gets the same answer
// for a stream the gateway serves and one it does not: listing reveals
// nothing of what it may not see.
func TestListingTellsNothingOfWhatTheCallerMayNotSee(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	natstest.Stream(t, nc, "OTHER", "other.>")
	r := replicaOf(t, ns, token.RandomKeyring(), replica.Options{Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing"}}})
	none := func(string, string) bool { return false }
	ctx := context.Background()
	_, served := r.Consumers(ctx, "ORDERS", none)
	_, unserved := r.Consumers(ctx, "OTHER", none)
	if !errors.Is(served, errs.ErrStreamNotFound) || !errors.Is(unserved, errs.ErrStreamNotFound) ||
		strings.ReplaceAll(served.Error(), "ORDERS", "X") != strings.ReplaceAll(unserved.Error(), "OTHER", "X") {
		t.Fatalf("a served stream: %v; one not served: %v; want the same NOT_FOUND", served, unserved)
	}
}
