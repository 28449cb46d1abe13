package deadletter

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/natstest"
)

var billingRoute = Route{Stream: "ORDERS", Consumer: "billing", Subject: dlqSubject}

// anyTarget lets a redrive publish to any subject.
func anyTarget(context.Context, string) error { return nil }

// redrive redrives billing's dead letters at seqs (all when none) and
// fails on an error of the call itself.
func (e *env) redrive(seqs ...uint64) (int, []Failure) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	n, fails, err := Redrive(ctx, e.js, billingRoute, seqs, anyTarget, e.js.PublishMsg)
	if err != nil {
		e.t.Fatalf("redrive: %v", err)
	}
	return n, fails
}

// putLetter stores a dead letter of billing as any NATS client may: on
// subject of the dead-letter stream, with header h besides the worker's
// headers naming ORDERS/billing and original.
func (e *env) putLetter(subject, original, data string, h nats.Header) uint64 {
	e.t.Helper()
	m := &nats.Msg{Subject: subject, Data: []byte(data), Header: nats.Header{}}
	for k, vs := range h {
		m.Header[k] = vs
	}
	m.Header.Set(HeaderStream, "ORDERS")
	m.Header.Set(HeaderConsumer, "billing")
	m.Header.Set(HeaderSubject, original)
	m.Header.Set(HeaderSeq, "1")
	m.Header.Set(HeaderReason, ReasonTerminated)
	ack, err := e.js.PublishMsg(context.Background(), m)
	if err != nil {
		e.t.Fatal(err)
	}
	return ack.Sequence
}

// Several letters redriven at once each arrive back on their own subject:
// each republish has a msg id of its own, so none is deduplicated as a copy
// of another and then deleted from the dead-letter stream, lost.
func TestRedriveOfSeveralLettersLosesNone(t *testing.T) {
	for _, how := range []string{"all", "by seq"} {
		t.Run(how, func(t *testing.T) {
			e := newEnv(t)
			e.start(true)
			subjects := []string{"orders.a", "orders.b", "orders.c"}
			for _, s := range subjects {
				if _, err := e.js.Publish(context.Background(), s, []byte("data of "+s)); err != nil {
					t.Fatal(err)
				}
				e.term()
			}
			e.workedOff(uint64(len(subjects)))
			dls := e.deadLetters()
			if len(dls) != len(subjects) {
				t.Fatalf("%d dead letters; want %d", len(dls), len(subjects))
			}
			var seqs []uint64
			if how == "by seq" {
				for _, dl := range dls {
					seqs = append(seqs, dl.Sequence)
				}
			}
			n, fails := e.redrive(seqs...)
			if n != len(subjects) || len(fails) != 0 {
				t.Fatalf("redriven %d, failures %v; want %d and none", n, fails, len(subjects))
			}
			for _, s := range subjects {
				got := natstest.StreamMsgs(t, e.js, "ORDERS", s)
				if len(got) != 2 || string(got[1].Data) != "data of "+s {
					t.Errorf("%s holds %d messages; want the original and its redriven copy %q", s, len(got), "data of "+s)
				}
			}
			if left := e.deadLetters(); len(left) != 0 {
				t.Fatalf("%d dead letters left after all were redriven", len(left))
			}
		})
	}
}

// A letter's Nats-* headers are not republished: the server acts on them
// again where they land, and a Nats-Rollup would purge the subject of the
// messages already there. The letter's own headers stay, jetgate's go.
func TestRedriveDoesNotRepublishNatsHeaders(t *testing.T) {
	e := newEnv(t)
	for _, name := range []string{"ORDERS", "DLQ"} {
		s, err := e.js.Stream(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		cfg := s.CachedInfo().Config
		cfg.AllowRollup = true
		if _, err := e.js.UpdateStream(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.js.Publish(context.Background(), "orders.a", []byte("already there")); err != nil {
		t.Fatal(err)
	}
	seq := e.putLetter(dlqSubject, "orders.a", "redriven", nats.Header{"Nats-Rollup": {"sub"}, "X-Order": {"7"}})
	n, fails := e.redrive(seq)
	if n != 1 || len(fails) != 0 {
		t.Fatalf("redriven %d, failures %v; want the letter", n, fails)
	}
	got := natstest.StreamMsgs(t, e.js, "ORDERS", "orders.a")
	if len(got) != 2 || string(got[0].Data) != "already there" || string(got[1].Data) != "redriven" {
		var data []string
		for _, m := range got {
			data = append(data, string(m.Data))
		}
		t.Fatalf("orders.a holds %q; want the message there before and the redriven copy", data)
	}
	for k, vs := range got[1].Header {
		// Its own id, and the stream the republish expects (the server
		// keeps the header it checked): no header of the letter's.
		if strings.HasPrefix(k, "Jetgate-Dead-") || (strings.HasPrefix(strings.ToLower(k), "nats-") && k != jetstream.MsgIDHeader && k != jetstream.ExpectedStreamHeader) {
			t.Errorf("the redriven copy carries %s: %v", k, vs)
		}
	}
	if v := got[1].Header.Get("X-Order"); v != "7" {
		t.Errorf("the redriven copy's X-Order %q; want the letter's 7", v)
	}
}

// A message on another subject of the dead-letter stream is not one of the
// consumer's dead letters, though its headers name the consumer: a redrive
// of its seq leaves it, and publishes nothing.
func TestRedriveTakesOnlyLettersOnTheDeadLetterSubject(t *testing.T) {
	e := newEnv(t)
	seq := e.putLetter("dlq.other", "orders.a", "not billing's", nil)
	n, fails := e.redrive(seq)
	if n != 0 || len(fails) != 1 || fails[0].Seq != seq || !errors.Is(fails[0].Err, errs.ErrDeadLetterNotFound) {
		t.Fatalf("redriven %d, failures %v; want seq %d refused as not a dead letter", n, fails, seq)
	}
	if got := natstest.StreamMsgs(t, e.js, "ORDERS", "orders.a"); len(got) != 0 {
		t.Fatalf("%d messages published to orders.a", len(got))
	}
	if left := natstest.StreamMsgs(t, e.js, "DLQ", "dlq.other"); len(left) != 1 || left[0].Sequence != seq {
		t.Fatalf("dlq.other holds %d messages; want seq %d left", len(left), seq)
	}
}

// Redrive of all reads past letters that stay, however many: more than
// MaxRedrive of them at the front once stopped it for good. It lists at most
// MaxRedrive failures.
func TestRedriveOfAllGoesPastLettersThatStay(t *testing.T) {
	e := newEnv(t)
	for range MaxRedrive + 1 { // their message had left its stream: nothing to put back
		m := &nats.Msg{Subject: dlqSubject, Header: nats.Header{}}
		m.Header.Set(HeaderStream, "ORDERS")
		m.Header.Set(HeaderConsumer, "billing")
		m.Header.Set(HeaderReason, ReasonMaxDeliver)
		if _, err := e.js.PublishMsg(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	e.putLetter(dlqSubject, "orders.back", "put back", nil)
	n, fails := e.redrive()
	if n != 1 || len(fails) != MaxRedrive {
		t.Fatalf("redriven %d, %d failures listed; want the one letter behind the %d that stay, and %d failures", n, len(fails), MaxRedrive+1, MaxRedrive)
	}
	if got := natstest.StreamMsgs(t, e.js, "ORDERS", "orders.back"); len(got) != 1 || string(got[0].Data) != "put back" {
		t.Fatalf("orders.back holds %d messages; want the letter put back", len(got))
	}
}

// Redrive of all passes over another consumer's letters on a shared
// dead-letter subject, as the listing does: they are neither redriven nor
// failures of this consumer's.
func TestRedriveOfAllPassesOverOtherConsumersLetters(t *testing.T) {
	e := newEnv(t)
	m := &nats.Msg{Subject: dlqSubject, Data: []byte("shipping's"), Header: nats.Header{}}
	m.Header.Set(HeaderStream, "ORDERS")
	m.Header.Set(HeaderConsumer, "shipping")
	m.Header.Set(HeaderSubject, "orders.theirs")
	m.Header.Set(HeaderReason, ReasonTerminated)
	ack, err := e.js.PublishMsg(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	e.putLetter(dlqSubject, "orders.ours", "billing's", nil)
	n, fails := e.redrive()
	if n != 1 || len(fails) != 0 {
		t.Fatalf("redriven %d, failures %v; want billing's letter alone, and no failure", n, fails)
	}
	if left := natstest.StreamMsgs(t, e.js, "DLQ", dlqSubject); len(left) != 1 || left[0].Sequence != ack.Sequence {
		t.Fatalf("the dead-letter subject holds %d letters; want shipping's left", len(left))
	}
}

// A letter whose subject another stream binds now is not put there: the
// republish expects the consumer's stream, and the letter stays.
func TestRedriveDoesNotPublishToAnotherStream(t *testing.T) {
	e := newEnv(t)
	natstest.Stream(t, e.nc, "ELSEWHERE", "elsewhere.>")
	seq := e.putLetter(dlqSubject, "elsewhere.x", "lost if put there", nil)
	n, fails := e.redrive(seq)
	if n != 0 || len(fails) != 1 || !errors.Is(fails[0].Err, errs.ErrPublishRefused) {
		t.Fatalf("redriven %d, failures %v; want the letter refused", n, fails)
	}
	if got := natstest.StreamMsgs(t, e.js, "ELSEWHERE", "elsewhere.x"); len(got) != 0 {
		t.Errorf("the letter was put on another stream")
	}
	if left := natstest.StreamMsgs(t, e.js, "DLQ", dlqSubject); len(left) != 1 {
		t.Errorf("the dead-letter subject holds %d letters; want the letter to stay", len(left))
	}
}
