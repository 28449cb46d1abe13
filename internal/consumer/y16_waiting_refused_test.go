package consumer

import (
	"context"
	"testing"
	"time"
)

// A pull the server refused for max_waiting closes a place: the limit falls
// by one, to no more than the pulls still open hold, and its caller waits in
// line for one of them; with none open (clients outside jetgate may hold
// every place) the limit stands and the caller is told.
func TestY16RefusedPullClosesItsPlace(t *testing.T) {
	w := newWaitingPulls(4)
	for range 4 {
		take(w, context.Background(), time.Now())
	}
	// Dropped without a word: its place still taken, given back here.
	if !w.refused(true) {
		t.Fatal("3 pulls still open, yet the caller is not to wait for one")
	}
	if open, limit, _ := w.counts(); open != 3 || limit != 3 {
		t.Fatalf("open %d, limit %d after one refused of 4; want 3 and 3", open, limit)
	}
	// Refused with a status: its place was given back as it ended.
	w.release()
	if !w.refused(false) {
		t.Fatal("2 pulls still open, yet the caller is not to wait for one")
	}
	if open, limit, _ := w.counts(); open != 2 || limit != 2 {
		t.Fatalf("open %d, limit %d after a second refused; want 2 and 2", open, limit)
	}
	if take(w, context.Background(), time.Now()) {
		t.Fatal("a place was given above the limit a refusal closed")
	}
	w.grow(1) // the server has room again
	if _, limit, _ := w.counts(); limit != 3 {
		t.Fatalf("limit %d after room 1 with 2 open, want 3", limit)
	}

	alone := newWaitingPulls(4)
	take(alone, context.Background(), time.Now())
	if alone.refused(true) {
		t.Fatal("no pull of the replica's open, yet the caller is to wait in line")
	}
	if open, limit, _ := alone.counts(); open != 0 || limit != 4 {
		t.Fatalf("open %d, limit %d with no pull open; want 0 and the limit as it stood (4)", open, limit)
	}
}
