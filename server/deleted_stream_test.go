package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/deadletter"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

// A stream deleted on the server takes its consumers with it (DESIGN 17:
// CONSUMER_NOT_FOUND, with the reason), whether the gateway's file names
// them or they were bound on demand.

// gone starts a gateway serving ORDERS/billing and GONE/c from its file,
// and on demand what ondemand matches; GONE also has the consumer d, made
// by another tool.
func gone(t *testing.T, ondemand ...coreconsumer.Match) (*gwtest.Replica, jetstream.JetStream) {
	t.Helper()
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, stream, "orders.>")
	natstest.Stream(t, nc, "GONE", "gone.>")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateConsumer(context.Background(), "GONE", jetstream.ConsumerConfig{Durable: "d", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	g := gwtest.Start(t, replica.Options{
		Conn:      natstest.Connect(t, ns),
		Consumers: []coreconsumer.Config{{Stream: stream, Name: consumer}, {Stream: "GONE", Name: "c"}},
		OnDemand:  coreconsumer.OnDemand{Match: ondemand},
		Keys:      token.RandomKeyring(),
	})
	return g, js
}

// ListStreams lists the streams left: one deleted under a consumer of the
// file (which stays bound, answering NOT_FOUND until the stream is made
// again) failed the whole listing NOT_FOUND, and the console's front page
// with it.
func TestListStreamsLeavesOutAStreamDeletedOnTheServer(t *testing.T) {
	g, js := gone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if resp, err := g.Streams.ListStreams(ctx, &jetgatev1.ListStreamsRequest{}); err != nil || len(resp.GetStreams()) != 2 {
		t.Fatalf("before the delete: %v, %v; want 2 streams", resp.GetStreams(), err)
	}
	if err := js.DeleteStream(ctx, "GONE"); err != nil {
		t.Fatal(err)
	}
	resp, err := g.Streams.ListStreams(ctx, &jetgatev1.ListStreamsRequest{})
	if err != nil {
		t.Fatalf("ListStreams after a stream was deleted: %v", err)
	}
	if len(resp.GetStreams()) != 1 || resp.GetStreams()[0].GetName() != stream {
		t.Fatalf("ListStreams: %v; want %s alone", resp.GetStreams(), stream)
	}
}

// A consumer of the file whose stream was deleted is NOT_FOUND for every
// call: GetConsumer and Fetch said UNAVAILABLE (a retry for ever), Pause
// and Resume FAILED_PRECONDITION.
func TestAConsumerOfADeletedStreamIsNotFound(t *testing.T) {
	g, js := gone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := js.DeleteStream(ctx, "GONE"); err != nil {
		t.Fatal(err)
	}
	_, err := g.Consumers.GetConsumer(ctx, &jetgatev1.GetConsumerRequest{Stream: "GONE", Consumer: "c"})
	wantCode(t, err, codes.NotFound, "CONSUMER_NOT_FOUND")
	_, err = g.Consumers.Pause(ctx, &jetgatev1.PauseRequest{Stream: "GONE", Consumer: "c", PauseUntil: timestamppb.New(time.Now().Add(time.Hour))})
	wantCode(t, err, codes.NotFound, "CONSUMER_NOT_FOUND")
	_, err = g.Consumers.Resume(ctx, &jetgatev1.ResumeRequest{Stream: "GONE", Consumer: "c"})
	wantCode(t, err, codes.NotFound, "CONSUMER_NOT_FOUND")
	_, err = g.Consumers.Fetch(ctx, &jetgatev1.FetchRequest{Stream: "GONE", Consumer: "c", Expires: durationpb.New(time.Second)})
	wantCode(t, err, codes.NotFound, "CONSUMER_NOT_FOUND")
}

// A consumer bound on demand whose stream was deleted is NOT_FOUND, as one
// of a stream that never was: it was UNAVAILABLE for good (the stream's
// handle is kept, and binding it again took the server's "stream not
// found" for NATS away).
func TestAConsumerOnDemandOfADeletedStreamIsNotFound(t *testing.T) {
	g, js := gone(t, coreconsumer.Match{Stream: "*", Consumer: "*"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := g.Consumers.GetConsumer(ctx, &jetgatev1.GetConsumerRequest{Stream: "GONE", Consumer: "d"}); err != nil {
		t.Fatalf("bound on demand: %v", err)
	}
	_, err := g.Consumers.GetConsumer(ctx, &jetgatev1.GetConsumerRequest{Stream: "NEVER", Consumer: "d"})
	wantCode(t, err, codes.NotFound, "CONSUMER_NOT_FOUND")
	if err := js.DeleteStream(ctx, "GONE"); err != nil {
		t.Fatal(err)
	}
	// The server's advisory unbinds it, or the call finds it gone.
	natstest.Eventually(t, 10*time.Second, "the consumer of the deleted stream is NOT_FOUND", func() bool {
		_, err = g.Consumers.GetConsumer(ctx, &jetgatev1.GetConsumerRequest{Stream: "GONE", Consumer: "d"})
		if c := status.Code(err); c != codes.NotFound && c != codes.Unavailable {
			t.Fatalf("GetConsumer: %v", err)
		}
		return status.Code(err) == codes.NotFound
	})
	wantCode(t, err, codes.NotFound, "CONSUMER_NOT_FOUND")
}

// ListDeadLetters of a consumer that is not served (jetgate's own dead
// letter worker, or one that exists nowhere, both matching the catch-all)
// is NOT_FOUND, as GetConsumer says: it was FAILED_PRECONDITION
// NO_DEAD_LETTER.
func TestListDeadLettersOfAConsumerNotServedIsNotFound(t *testing.T) {
	e := newDLEnv(t)
	g := gwtest.Start(e.t, replica.Options{
		Conn: natstest.Connect(e.t, e.ns),
		Consumers: []coreconsumer.Config{
			{Stream: stream, Name: consumer, DeadLetter: &coreconsumer.DeadLetter{Subject: dlqSubject, OnTerm: true}},
		},
		OnDemand: coreconsumer.OnDemand{Match: []coreconsumer.Match{{Stream: "*", Consumer: "*"}}},
		Keys:     e.keys,
	})
	ctx := context.Background()
	for _, k := range [][2]string{{deadletter.AdvisoryStream, deadletter.WorkerDurable}, {stream, "nobody"}} {
		_, err := g.Consumers.GetConsumer(ctx, &jetgatev1.GetConsumerRequest{Stream: k[0], Consumer: k[1]})
		wantCode(t, err, codes.NotFound, "CONSUMER_NOT_FOUND")
		_, err = g.Consumers.ListDeadLetters(ctx, &jetgatev1.ListDeadLettersRequest{Stream: k[0], Consumer: k[1]})
		wantCode(t, err, codes.NotFound, "CONSUMER_NOT_FOUND")
		_, err = g.Consumers.Redrive(ctx, &jetgatev1.RedriveRequest{Stream: k[0], Consumer: k[1]})
		wantCode(t, err, codes.NotFound, "CONSUMER_NOT_FOUND")
	}
}
