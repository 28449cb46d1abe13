package consumer

import (
	"context"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/natstest"
)

// A caller that gets a place returns true; later ones wait in line, first
// come first served, and a freed place goes to the head of the line.
func TestWaitingPullsServeTheLineInOrder(t *testing.T) {
	w := newWaitingPulls(1)
	far := time.Now().Add(time.Minute)
	if !w.tryAcquire() {
		t.Fatal("the first place was not had at once")
	}
	const n = 5
	order := make(chan int, n)
	for i := range n {
		go func() {
			if !w.tryAcquire() && w.acquire(context.Background(), far) {
				order <- i
			}
		}()
		natstest.Eventually(t, 10*time.Second, "caller in line", func() bool { _, _, q := w.counts(); return q == i+1 })
	}
	for want := range n {
		w.release()
		if got := <-order; got != want {
			t.Fatalf("place went to caller %d, want %d (first come first served)", got, want)
		}
	}
	if open, _, queued := w.counts(); open != 1 || queued != 0 {
		t.Fatalf("open %d queued %d, want 1 and 0", open, queued)
	}
}

// A caller whose wait ends leaves the line, and the place it would have had
// goes to the next.
func TestWaitingPullsCallerThatLeavesGivesUpItsTurn(t *testing.T) {
	w := newWaitingPulls(1)
	take(w, context.Background(), time.Now().Add(time.Minute))

	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan bool)
	go func() { left <- take(w, ctx, time.Now().Add(time.Minute)) }()
	natstest.Eventually(t, 10*time.Second, "first in line", func() bool { _, _, q := w.counts(); return q == 1 })
	got := make(chan bool)
	go func() { got <- take(w, context.Background(), time.Now().Add(time.Minute)) }()
	natstest.Eventually(t, 10*time.Second, "second in line", func() bool { _, _, q := w.counts(); return q == 2 })

	cancel()
	if <-left {
		t.Fatal("a canceled caller got a place")
	}
	if _, _, q := w.counts(); q != 1 {
		t.Fatalf("%d in line after one left, want 1", q)
	}
	w.release()
	if !<-got {
		t.Fatal("the caller behind the one that left got no place")
	}

	// Expiry ends a wait as cancellation does.
	if take(w, context.Background(), time.Now().Add(20*time.Millisecond)) {
		t.Fatal("got a place though every place was taken")
	}
	if open, _, q := w.counts(); open != 1 || q != 0 {
		t.Fatalf("open %d queued %d after an expired wait, want 1 and 0", open, q)
	}
}

// A smaller share takes effect at once; a larger one only as far as the
// server has room, and never past the share.
func TestWaitingPullsShareShrinksAtOnceAndGrowsByRoom(t *testing.T) {
	w := newWaitingPulls(10)
	for range 6 {
		take(w, context.Background(), time.Now())
	}
	w.setShare(4)
	if _, limit, _ := w.counts(); limit != 4 {
		t.Fatalf("limit %d after share 4, want 4", limit)
	}
	if take(w, context.Background(), time.Now()) {
		t.Fatal("a place above the new share was given")
	}
	for range 3 {
		w.release() // 3 open now
	}
	if !take(w, context.Background(), time.Now()) {
		t.Fatal("a place within the share was refused")
	}

	w.setShare(8)
	if !w.belowShare() {
		t.Fatal("not below a larger share")
	}
	w.grow(2) // 4 open + 2 free on the server
	if _, limit, _ := w.counts(); limit != 6 {
		t.Fatalf("limit %d after room 2 with 4 open, want 6", limit)
	}
	w.grow(100)
	if _, limit, _ := w.counts(); limit != 8 {
		t.Fatalf("limit %d, want the share 8", limit)
	}
	w.grow(0) // no room never takes places back
	if _, limit, _ := w.counts(); limit != 8 {
		t.Fatalf("limit %d after no room, want 8", limit)
	}

	// A replica joining others starts from nothing and grows by room.
	j := newWaitingPulls(10)
	j.join(5)
	if _, limit, _ := j.counts(); limit != 0 {
		t.Fatalf("joining limit %d, want 0", limit)
	}
	j.grow(3)
	if _, limit, _ := j.counts(); limit != 3 {
		t.Fatalf("joining limit %d after room 3, want 3", limit)
	}
}

// Growing the limit hands the new places to the callers in line.
func TestWaitingPullsGrowServesTheLine(t *testing.T) {
	w := newWaitingPulls(1)
	w.join(3)
	got := make(chan bool, 2)
	for range 2 {
		go func() { got <- take(w, context.Background(), time.Now().Add(time.Minute)) }()
	}
	natstest.Eventually(t, 10*time.Second, "two in line", func() bool { _, _, q := w.counts(); return q == 2 })
	w.grow(2)
	for range 2 {
		if !<-got {
			t.Fatal("a caller in line got no place when the limit grew")
		}
	}
}

// take is acquire, under a shorter name.
func take(w *waitingPulls, ctx context.Context, until time.Time) bool {
	return w.acquire(ctx, until)
}
