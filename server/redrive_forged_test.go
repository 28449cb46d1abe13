package server_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/deadletter"
	"github.com/jetgate/jetgate/internal/natstest"
)

// forged is a dead letter any NATS client could store on the dead-letter
// subject, naming subject as the message's original.
func forged(stream, consumer, subject string) nats.Header {
	return nats.Header{
		deadletter.HeaderStream:   {stream},
		deadletter.HeaderConsumer: {consumer},
		deadletter.HeaderSubject:  {subject},
		"X-Order":                 {"1"},
	}
}

// A dead letter is data any NATS client may have written: Redrive publishes
// only to subjects of the consumer's own stream that Publish would take,
// says so for each letter it refuses, keeps that letter, and redrives the
// good ones. Letters that name another consumer are refused when asked for
// by sequence, and passed over by a Redrive of all.
func TestRedriveRefusesForgedDeadLetters(t *testing.T) {
	e := newDLEnv(t)
	plain := natstest.Stream(t, e.nc, "PLAIN", "plain.>")
	g := e.gateway()
	e.publish("plain.keep", "keep me", nil)
	bad := map[uint64]string{
		e.publish(dlqSubject, "purge", forged(stream, consumer, "$JS.API.STREAM.PURGE.PLAIN")): "SUBJECT_NOT_ALLOWED",
		e.publish(dlqSubject, "other", forged(stream, consumer, "plain.x")):                    "SUBJECT_NOT_ALLOWED",
		e.publish(dlqSubject, "wild", forged(stream, consumer, "orders.*")):                    "INVALID_ARGUMENT",
		e.publish(dlqSubject, "core", forged(stream, consumer, "_INBOX.x")):                    "SUBJECT_NOT_ALLOWED",
		e.publish(dlqSubject, "moved", forged(stream, other, "orders.eu")):                     "DEAD_LETTER_NOT_FOUND",
		e.publish(dlqSubject, "moved", forged("PLAIN", consumer, "plain.y")):                   "DEAD_LETTER_NOT_FOUND",
	}
	e.publish(dlqSubject, "good", forged(stream, consumer, "orders.eu"))

	for _, all := range []bool{false, true} {
		req := &jetgatev1.RedriveRequest{Stream: stream, Consumer: consumer}
		if !all {
			for seq := range bad {
				req.Seqs = append(req.Seqs, seq)
			}
		}
		resp, err := g.Consumers.Redrive(context.Background(), req)
		if err != nil {
			t.Fatalf("redrive (all %v): %v", all, err)
		}
		want := len(bad)
		if all {
			want -= 2 // letters of other consumers are passed over, as the listing does
		}
		if len(resp.GetFailures()) != want {
			t.Fatalf("redrive (all %v): %d failures, want %d: %v", all, len(resp.GetFailures()), want, resp.GetFailures())
		}
		for _, f := range resp.GetFailures() {
			if want := bad[f.GetSeq()]; f.GetReason() != want || f.GetMessage() == "" {
				t.Errorf("letter %d: reason %q (%q), want %q", f.GetSeq(), f.GetReason(), f.GetMessage(), want)
			}
		}
		if want := map[bool]int64{false: 0, true: 1}[all]; resp.GetRedriven() != want {
			t.Fatalf("redrive (all %v): %d redriven, want %d", all, resp.GetRedriven(), want)
		}
	}
	if n := len(e.deadLetters()); n != len(bad) {
		t.Fatalf("%d dead letters left, want the %d refused ones", n, len(bad))
	}
	info, err := plain.Info(context.Background())
	if err != nil || info.State.Msgs != 1 {
		t.Fatalf("stream PLAIN after the redrives: %+v %v; want its one message, untouched", info.State, err)
	}
	ms := fetchVia(t, g.Consumers, 10, 0)
	if len(ms) != 1 || string(ms[0].GetData()) != "good" {
		t.Fatalf("the good letter redriven: %v", ms)
	}
}
