package pull

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/natstest"
)

// next runs p.Next with a generous bound.
func next(t *testing.T, p *Pull, gap, maxWait time.Duration, other <-chan struct{}) ([]Msg, bool, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return p.Next(ctx, gap, maxWait, other)
}

// firstOfOpenPull opens a pull for 3 messages, publishes one, and returns
// it as Next hands it on, the pull still open.
func firstOfOpenPull(t *testing.T, e *env, c *counter) (*Pull, []Msg) {
	t.Helper()
	p := e.start(e.nc, NewRequest(3, 10*time.Second, 0, Priority{}), c)
	e.waiting(1)
	e.publish(1, []byte("first"))
	msgs, ended, err := next(t, p, time.Millisecond, time.Second, nil)
	if err != nil || ended || len(msgs) != 1 || string(msgs[0].Data) != "first" {
		t.Fatalf("Next: %d messages, ended %v, %v; want the first, the pull open", len(msgs), ended, err)
	}
	return p, msgs
}

// Next hands on what a pull has once the server pauses, with the pull still
// open; the rest comes with later calls, and the last one reports the end.
func TestNextReturnsWhatCameWhileThePullIsOpen(t *testing.T) {
	e := newEnv(t)
	var c counter
	p, _ := firstOfOpenPull(t, e, &c)
	if n := e.info().NumWaiting; n != 1 {
		t.Fatalf("server: %d waiting pulls, want the pull still open", n)
	}

	e.publish(2, []byte("rest"))
	var rest []Msg
	for ended := false; !ended; {
		msgs, end, err := next(t, p, time.Millisecond, time.Second, nil)
		ended = end
		if err != nil {
			t.Fatalf("Next: %v, want nil (batch filled)", err)
		}
		rest = append(rest, msgs...)
	}
	if len(rest) != 2 || c.calls() != 1 {
		t.Fatalf("after the first: %d messages, release called %d times; want 2 and once", len(rest), c.calls())
	}
}

// Next returns at once, with nothing, when the caller's other source wakes
// it; the pull stays open.
func TestNextReturnsWhenOtherFires(t *testing.T) {
	e := newEnv(t)
	var c counter
	p := e.start(e.nc, NewRequest(1, 10*time.Second, 0, Priority{}), &c)
	e.waiting(1)
	other := make(chan struct{})
	close(other)
	msgs, ended, err := next(t, p, time.Millisecond, time.Second, other)
	if err != nil || ended || len(msgs) != 0 {
		t.Fatalf("Next: %d messages, ended %v, %v; want nothing, the pull open", len(msgs), ended, err)
	}
	if c.calls() != 0 {
		t.Fatal("release called: the pull is still open on the server")
	}
}

// OnMessage tells whoever took a pull over of each message that comes.
func TestOnMessageIsCalledForEachMessage(t *testing.T) {
	e := newEnv(t)
	var c counter
	p := e.start(e.nc, NewRequest(2, 10*time.Second, 0, Priority{}), &c)
	e.waiting(1)
	var heard atomic.Int32
	p.OnMessage(func() { heard.Add(1) })
	e.publish(2, []byte("m"))
	natstest.Eventually(t, 10*time.Second, "both messages heard of", func() bool { return heard.Load() == 2 })
	if msgs, ended, _ := p.Take(time.Now()); len(msgs) != 2 || !ended {
		t.Fatalf("Take: %d messages, ended %v; want 2 and the end", len(msgs), ended)
	}
}
