package reliability

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/token"
)

// TestFaultAckWaitEditedMidTraffic edits the consumer with nats.go, as an
// operator does with the NATS CLI, while callers fetch and settle through
// three replicas at random and work on each batch up to 1.5s: ack_wait cut
// from 10s to 1s and raised again, and a backoff added and removed. Callers
// holding a message past the server's new timing see it redelivered;
// nothing is lost, and no settle lands on a delivery it was not issued for
// (no lease outlives the server's redelivery).
func TestFaultAckWaitEditedMidTraffic(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, stream, "orders.>")
	keys := token.RandomKeyring()
	var gs []*gwtest.Replica
	for range 3 {
		gs = append(gs, gateway(t, natstest.Connect(t, ns), keys, 10*time.Second))
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	d := driver(gs...)
	d.Answer = randomAnswers
	d.PublishGap = time.Millisecond
	d.Hold = func(r *rand.Rand) time.Duration { return time.Duration(r.IntN(1500)) * time.Millisecond }
	check := newDeliveryCheck()
	d.Watch = check
	edits := []func(*jetstream.ConsumerConfig){
		func(c *jetstream.ConsumerConfig) { c.AckWait = time.Second },
		func(c *jetstream.ConsumerConfig) { c.AckWait = 10 * time.Second },
		func(c *jetstream.ConsumerConfig) { c.BackOff = []time.Duration{time.Second, 2 * time.Second} },
		func(c *jetstream.ConsumerConfig) { c.BackOff, c.AckWait = nil, 10*time.Second },
	}
	n := scale(1500, 15000)
	made := 0
	r := run(t, d, n, 4, 4*time.Minute, func(ctx context.Context) {
		for d.Checker.Report().Published < n && ctx.Err() == nil {
			backoff(ctx, 1500*time.Millisecond)
			cfg := consumerInfo(t, nc).Config
			edits[made%len(edits)](&cfg)
			ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if _, err := js.UpdateConsumer(ectx, stream, cfg); err != nil && ctx.Err() == nil {
				t.Errorf("edit %d: %v", made, err)
			}
			cancel()
			made++
		}
	})
	t.Logf("%d edits", made)
	if wrong := check.verdict(); len(wrong) > 0 {
		t.Fatalf("%d settles landed on a delivery they were not issued for, e.g. %s", len(wrong), wrong[0])
	}
	if made < 2 || r.Redelivered == 0 {
		t.Fatalf("the run exercised no cut ack_wait: %d edits, %v", made, r)
	}
}
