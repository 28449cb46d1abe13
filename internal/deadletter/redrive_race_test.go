package deadletter

import (
	"context"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/natstest"
)

func (e *env) ordersMsgs() uint64 {
	e.t.Helper()
	return e.streamState("ORDERS").Msgs
}

// Two replicas redriving all of a consumer's letters at once put each back
// once, and together say they redrove as many as there were: a letter the
// other removed first is no failure (it was told UNAVAILABLE, "redrive it
// again", of letters gone already).
func TestTwoRedrivesOfAllAtOnceSayWhatTheyDid(t *testing.T) {
	e := newEnv(t)
	const n = 40
	for i := range n {
		e.putLetter(dlqSubject, "orders.x", "d"+string(rune('a'+i%26)), nil)
	}
	before := e.ordersMsgs()
	nc2, err := nats.Connect(e.nc.ConnectedUrl())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc2.Close)
	js2, err := jetstream.New(nc2)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	counts := make([]int, 2)
	for i, js := range []jetstream.JetStream{e.js, js2} {
		wg.Go(func() {
			c, fails, err := Redrive(context.Background(), js, billingRoute, nil, anyTarget, js.PublishMsg)
			if err != nil || len(fails) != 0 {
				t.Errorf("redrive %d: %v %v", i, fails, err)
			}
			counts[i] = c
		})
	}
	wg.Wait()
	if got := e.ordersMsgs() - before; got != n {
		t.Fatalf("%d messages redriven into ORDERS; want %d", got, n)
	}
	if left := e.deadLetters(); len(left) != 0 {
		t.Fatalf("%d letters left", len(left))
	}
	if counts[0]+counts[1] != n {
		t.Errorf("the two redrives said %d + %d redriven; %d letters were put back", counts[0], counts[1], n)
	}
}

// A dead-letter stream made again numbers its letters from 1 again: a
// letter redriven must reach the consumer's stream, not be taken for a
// duplicate of the old stream's letter of the same sequence and deleted.
func TestARedriveAfterTheDeadLetterStreamWasMadeAgainPutsTheLetterBack(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	seq := e.putLetter(dlqSubject, "orders.x", "first", nil)
	if n, fails := e.redrive(seq); n != 1 || len(fails) != 0 {
		t.Fatalf("first redrive: %d %v", n, fails)
	}
	if err := e.js.DeleteStream(ctx, "DLQ"); err != nil {
		t.Fatal(err)
	}
	natstest.Stream(t, e.nc, "DLQ", "dlq.>")
	before := e.ordersMsgs()
	seq2 := e.putLetter(dlqSubject, "orders.x", "second, another letter", nil)
	if seq2 != seq {
		t.Fatalf("the new stream's letter at %d, not %d", seq2, seq)
	}
	n, fails := e.redrive(seq2)
	got := e.ordersMsgs() - before
	left := len(e.deadLetters())
	if got != 1 {
		t.Fatalf("redrive said %d redriven (failures %v), ORDERS took %d new messages, %d letters left in the dead-letter stream: the letter is lost", n, fails, got, left)
	}
}
