package reliability

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/timestamppb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/token"
)

// TestFaultSeeksAndEditsMidTraffic is issue scenario 4: while callers fetch
// and settle through three replicas at random and work on each batch up to
// 1.5s, an operator cuts ack_wait 30s→3s→30s (10s→2s→10s in the short
// form) and adds a backoff (nats.go, as
// the NATS CLI does), and callers seek the consumer to a time through
// jetgate's Seek on a random replica, each time at or before the first
// message not yet acknowledged, so that nothing is skipped. Nothing is
// lost, and no settle of a token from before a seek or an edit lands on a
// delivery it was not issued for.
func TestFaultSeeksAndEditsMidTraffic(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, stream, "orders.>")
	keys := token.RandomKeyring()
	long, short := time.Duration(scale(10, 30))*time.Second, time.Duration(scale(2, 3))*time.Second
	var gs []*gwtest.Replica
	for range 3 {
		gs = append(gs, gateway(t, natstest.Connect(t, ns), keys, long))
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
		nil, // a seek
		func(c *jetstream.ConsumerConfig) { c.AckWait = short },
		nil,
		func(c *jetstream.ConsumerConfig) { c.AckWait = long },
		func(c *jetstream.ConsumerConfig) { c.BackOff = []time.Duration{time.Second, short} },
		func(c *jetstream.ConsumerConfig) { c.BackOff = nil },
	}
	n := scale(1500, 15000)
	made, seeks := 0, 0
	r := run(t, d, n, 4, 4*time.Minute, func(ctx context.Context) {
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
		for d.Checker.Report().Published < n && ctx.Err() == nil {
			backoff(ctx, 1500*time.Millisecond)
			ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if edit := edits[made%len(edits)]; edit != nil {
				cfg := consumerInfo(t, nc).Config
				edit(&cfg)
				at := time.Now()
				if _, err := js.UpdateConsumer(ectx, stream, cfg); err != nil && ctx.Err() == nil {
					t.Errorf("edit %d: %v", made, err)
				}
				t.Logf("%s–%s: ack_wait %v, backoff %v", clock(at), clock(time.Now()), cfg.AckWait, cfg.BackOff)
			} else if at := time.Now(); seekBeforeTheFloor(ectx, t, rng, js, gs[rng.IntN(len(gs))]) {
				t.Logf("%s–%s: a seek", clock(at), clock(time.Now()))
				seeks++
			}
			cancel()
			made++
		}
	})
	t.Logf("%d edits and seeks, %d seeks", made, seeks)
	if wrong := check.verdict(); len(wrong) > 0 {
		t.Fatalf("%d settles landed on a delivery they were not issued for:\n%s", len(wrong), strings.Join(wrong[:min(len(wrong), 10)], "\n"))
	}
	if seeks == 0 || r.Redelivered == 0 {
		t.Fatalf("the run exercised no seek: %d seeks, %v", seeks, r)
	}
}

// seekBeforeTheFloor seeks the consumer through g to a time at or before
// the first message not yet acknowledged, up to a second earlier: every
// message from there is delivered again, none skipped.
func seekBeforeTheFloor(ctx context.Context, t *testing.T, rng *rand.Rand, js jetstream.JetStream, g *gwtest.Replica) bool {
	t.Helper()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Errorf("seek: stream: %v", err)
		return false
	}
	c, err := s.Consumer(ctx, consumer)
	if err != nil {
		t.Errorf("seek: consumer: %v", err)
		return false
	}
	ci, err := c.Info(ctx)
	if err != nil {
		t.Errorf("seek: info: %v", err)
		return false
	}
	first, err := s.GetMsg(ctx, ci.AckFloor.Stream+1)
	if err != nil {
		return false // nothing stored past the floor yet
	}
	at := first.Time.Add(-time.Duration(rng.IntN(1000)) * time.Millisecond)
	if _, err := g.Consumers.Seek(ctx, &jetgatev1.SeekRequest{Stream: stream, Consumer: consumer,
		Target: &jetgatev1.SeekRequest_Time{Time: timestamppb.New(at)}}); err != nil {
		if ctx.Err() == nil {
			t.Errorf("seek to %v: %v", at, err)
		}
		return false
	}
	return true
}
