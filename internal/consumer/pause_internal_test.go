package consumer

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The pause advisory numbers what it says as an info would: the answer to
// an info asked before the pause, coming after the advisory, must not say
// the consumer is delivering again (it did, until the 30s recheck).
func TestAnInfoAskedBeforeAPauseDoesNotUndoIt(t *testing.T) {
	info := func(paused bool) *jetstream.ConsumerInfo {
		return &jetstream.ConsumerInfo{Config: jetstream.ConsumerConfig{AckWait: 30 * time.Second, MaxAckPending: 1024}, Paused: paused}
	}
	s := &onServer{changed: func(_, _ *serverView) {}}
	s.set(info(false), s.tickets.Add(1))

	asked := s.tickets.Add(1) // an info is asked of a consumer delivering...
	s.SetPaused(true)         // ...the pause's advisory comes...
	s.set(info(false), asked) // ...and then the info's answer
	if !s.view().paused {
		t.Fatal("an info asked before the pause advisory set the consumer delivering again")
	}

	s.set(info(false), s.tickets.Add(1)) // an info asked after it stands
	if s.view().paused {
		t.Fatal("an info asked after the pause advisory was not taken")
	}
}
