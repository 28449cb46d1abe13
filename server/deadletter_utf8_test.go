package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// A dead letter of a message whose header is not UTF-8 (any NATS client may
// publish one; Fetch hands it out with raw bytes) is listed, its bytes that
// are not UTF-8 as U+FFFD, as Fetch shows them: one such letter failed its
// whole page INTERNAL.
func TestALetterNotInUTF8IsListed(t *testing.T) {
	e := newDLEnv(t)
	g := e.gateway()
	e.publish("orders.eu", "bad", nats.Header{"X-Bin": {"\xff\xfe"}})
	ms := fetchVia(t, g.Consumers, 1, 5*time.Second)
	if len(ms) != 1 {
		t.Fatalf("fetched %d", len(ms))
	}
	resp, err := g.Consumers.Term(context.Background(), &jetgatev1.TermRequest{Stream: stream, Consumer: consumer, Tokens: []string{ms[0].GetToken()}})
	if err != nil || len(resp.GetFailures()) != 0 {
		t.Fatalf("term: %v %v", resp, err)
	}
	e.waitDeadLetters(1)
	// a good one after it, too
	e.publish("orders.eu", "good", nil)
	ms = fetchVia(t, g.Consumers, 1, 5*time.Second)
	if _, err := g.Consumers.Term(context.Background(), &jetgatev1.TermRequest{Stream: stream, Consumer: consumer, Tokens: []string{ms[0].GetToken()}}); err != nil {
		t.Fatal(err)
	}
	e.waitDeadLetters(2)
	page, err := g.Consumers.ListDeadLetters(context.Background(), &jetgatev1.ListDeadLettersRequest{Stream: stream, Consumer: consumer})
	if err != nil {
		t.Fatalf("ListDeadLetters with a non-UTF-8 header in one letter: %v", err)
	}
	if len(page.GetDeadLetters()) != 2 {
		t.Fatalf("listed %d, want 2", len(page.GetDeadLetters()))
	}
	if got := page.GetDeadLetters()[0].GetHeaders()["X-Bin"].GetValues(); len(got) != 1 || got[0] != "\uFFFD\uFFFD" {
		t.Errorf("X-Bin listed as %q; want U+FFFD for each of its two bytes, as Fetch shows them", got)
	}
}
