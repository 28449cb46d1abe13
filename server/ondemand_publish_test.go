package server_test

import (
	"testing"

	"google.golang.org/grpc/codes"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
)

// A gateway of consumers on demand alone publishes to the streams its
// patterns name, as to a configured one: a subject of the stream is
// stored, another is SUBJECT_NOT_ALLOWED. A stream no pattern names, one
// that does not exist, and jetgate's own streams (even under a catch-all
// pattern) are STREAM_NOT_FOUND.
func TestAStreamOfConsumersOnDemandIsPublishedTo(t *testing.T) {
	h := newHarness(t)
	natstest.Stream(t, h.nc, "TEAMS", "teams.>")
	natstest.Stream(t, h.nc, "OTHER", "other.>")
	natstest.Stream(t, h.nc, "JETGATE_ADVISORIES", "advisories.>") // jetgate's own, with subjects a caller could name
	start := func(m ...coreconsumer.Match) jetgatev1.StreamServiceClient {
		return gwtest.Start(t, replica.Options{
			Conn:     natstest.Connect(t, h.ns),
			Keys:     h.cfg.keys,
			OnDemand: coreconsumer.OnDemand{Match: m},
		}).Streams
	}
	g := start(coreconsumer.Match{Stream: "TEAM*", Consumer: "team-*"})
	ack, err := g.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: "TEAMS", Subject: "teams.a", Data: []byte("x")})
	if err != nil || ack.GetSeq() != 1 {
		t.Fatalf("publish to a stream of consumers on demand: %v %v; want stored as sequence 1", ack, err)
	}
	_, err = g.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: "TEAMS", Subject: "other.a", Data: []byte("x")})
	wantCode(t, err, codes.InvalidArgument, "SUBJECT_NOT_ALLOWED")
	_, err = g.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: "OTHER", Subject: "other.a", Data: []byte("x")})
	wantCode(t, err, codes.NotFound, "STREAM_NOT_FOUND")
	_, err = g.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: "TEAMX", Subject: "teams.a", Data: []byte("x")})
	wantCode(t, err, codes.NotFound, "STREAM_NOT_FOUND")

	all := start(coreconsumer.Match{Stream: "*", Consumer: "*"})
	if _, err := all.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: "OTHER", Subject: "other.a", Data: []byte("x")}); err != nil {
		t.Fatalf("publish under the catch-all: %v", err)
	}
	_, err = all.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: "JETGATE_ADVISORIES", Subject: "advisories.x", Data: []byte("x")})
	wantCode(t, err, codes.NotFound, "STREAM_NOT_FOUND")
}

// With NATS away, a Publish to a stream of consumers on demand not looked
// up yet is UNAVAILABLE, not STREAM_NOT_FOUND: the caller should try again,
// not conclude the stream is gone.
func TestAPublishOnDemandWithNATSAwayIsUnavailable(t *testing.T) {
	h := newHarness(t)
	natstest.Stream(t, h.nc, "TEAMS", "teams.>")
	g := gwtest.Start(t, replica.Options{
		Conn:     natstest.Connect(t, h.ns),
		Keys:     h.cfg.keys,
		OnDemand: coreconsumer.OnDemand{Match: []coreconsumer.Match{{Stream: "TEAMS", Consumer: "*"}}},
	})
	h.ns.Shutdown()
	h.ns.WaitForShutdown()
	_, err := g.Streams.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: "TEAMS", Subject: "teams.a", Data: []byte("x")})
	wantCode(t, err, codes.Unavailable, "NATS_UNAVAILABLE")
}

// A stream may capture the subjects the replicas talk on (_JETGATE.) or
// the replies to requests (_INBOX.): a Publish there is refused before
// anything is sent, so that no caller can speak as a replica (a word of a
// reset voids every lease) or answer another client's request.
func TestAPublishUnderTheGatewaysOwnSubjectsIsRefused(t *testing.T) {
	h := newHarness(t)
	natstest.Stream(t, h.nc, "WIDE", "_JETGATE.>", "_INBOX.>")
	g := gwtest.Start(t, replica.Options{
		Conn:     natstest.Connect(t, h.ns),
		Keys:     h.cfg.keys,
		OnDemand: coreconsumer.OnDemand{Match: []coreconsumer.Match{{Stream: "WIDE", Consumer: "*"}}},
	})
	words, err := h.nc.SubscribeSync(coreconsumer.ResetWordPrefix + ">")
	if err != nil {
		t.Fatal(err)
	}
	for _, subject := range []string{coreconsumer.ResetWordPrefix + stream + "." + consumer, "_INBOX.abc"} {
		_, err := g.Streams.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: "WIDE", Subject: subject, Data: []byte("x r1")})
		wantCode(t, err, codes.InvalidArgument, "SUBJECT_NOT_ALLOWED")
	}
	if err := h.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := words.Pending(); n != 0 {
		t.Fatalf("%d words of resets went out from refused Publishes", n)
	}
}
