package server_test

import (
	"context"
	"testing"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// A Redrive that names a letter twice puts it back once and reports it
// redriven, as a settle naming a token twice settles it once: before, the
// answer said redriven 1 and listed the same sequence as a failure,
// DEAD_LETTER_NOT_FOUND, "no message", for the letter this call had just
// put back, and a caller retrying its failures got NOT_FOUND again.
func TestARedriveNamingALetterTwiceRedrivesItOnce(t *testing.T) {
	e := newDLEnv(t)
	g := e.gateway()
	e.termIsDeadLettered(g)
	dl := e.deadLetters()[0]
	resp, err := g.Consumers.Redrive(context.Background(), &jetgatev1.RedriveRequest{Stream: stream, Consumer: consumer, Seqs: []uint64{dl.Sequence, dl.Sequence}})
	if err != nil || resp.GetRedriven() != 1 || len(resp.GetFailures()) != 0 {
		t.Fatalf("redrive of seqs [%d %d]: %v, %v; want 1 redriven and no failure", dl.Sequence, dl.Sequence, resp, err)
	}
	if left := e.deadLetters(); len(left) != 0 {
		t.Fatalf("%d dead letters left", len(left))
	}
	ms := fetchVia(t, g.Consumers, 2, 0)
	if len(ms) != 1 || string(ms[0].GetData()) != "bad" || ms[0].GetMetadata().GetNumDelivered() != 1 {
		t.Fatalf("after the redrive: %v; want the message once, delivered afresh", ms)
	}
}
