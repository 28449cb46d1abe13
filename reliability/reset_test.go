package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/timestamppb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/token"
)

// deliveryCheck holds jetgate to "no settle lands on a delivery it was not
// issued for": a settle confirmed for one delivery of a message, sent after
// a later delivery of that message was handed to a caller, would have
// settled that later one (the server settles by stream sequence alone). A
// lease's deadline keeps plain redeliveries out of it; after a consumer
// reset, only jetgate's noticing the reset does.
//
// A settle is tried again only after an attempt whose outcome is unknown,
// which may have landed. An Ack's or Term's landing redelivers nothing, so a
// later delivery means no earlier attempt of theirs landed: the last one is
// what did. A Nak's landing redelivers the message at once, and jetgate
// answers the retry of a Nak that may have landed as done without sending
// it: the later delivery may be the first attempt's own redelivery, so a
// Nak (with a delay or without) is held to its first attempt. (The driver
// also retries a Nak refused NATS_UNAVAILABLE for sure, not sent: one whose
// retry then landed on a redelivery would pass unseen. jetgate's deadline
// checks, tested on their own, are what stop that.)
type deliveryCheck struct {
	mu       sync.Mutex
	latest   map[uint64]handed    // by stream sequence: the last delivery handed out
	attempts map[string]time.Time // by token: when its settle attempt was sent (the last; a Nak's first)
	wrong    []string             // settles that landed on a later delivery
}

type handed struct {
	token     string
	at        time.Time
	delivered uint64
}

func newDeliveryCheck() *deliveryCheck {
	return &deliveryCheck{latest: make(map[uint64]handed), attempts: make(map[string]time.Time)}
}

func (c *deliveryCheck) Delivered(m *jetgatev1.Message, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	seq := m.GetMetadata().GetStreamSeq()
	if h, ok := c.latest[seq]; !ok || at.After(h.at) {
		c.latest[seq] = handed{m.GetToken(), at, m.GetMetadata().GetNumDelivered()}
	}
}

func (c *deliveryCheck) Settling(a Action, ms []*jetgatev1.Message) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range ms {
		if _, tried := c.attempts[m.GetToken()]; tried && (a == Nak || a == NakDelay) {
			continue
		}
		c.attempts[m.GetToken()] = now
	}
}

func (c *deliveryCheck) Settled(a Action, m *jetgatev1.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	later := c.latest[m.GetMetadata().GetStreamSeq()]
	sent := c.attempts[m.GetToken()]
	switch {
	case later.token == m.GetToken() || !later.at.Before(sent):
	default:
		c.wrong = append(c.wrong, fmt.Sprintf("%s of %s (stream_seq %d, delivery %d, lease deadline %s), sent at %s, %v after a later delivery (%d) was handed out",
			a, m.GetData(), m.GetMetadata().GetStreamSeq(), m.GetMetadata().GetNumDelivered(), clock(m.GetLeaseDeadline().AsTime()),
			clock(sent), sent.Sub(later.at).Round(time.Millisecond), later.delivered))
	}
}

// clock is t's time of day to the millisecond, for the logs.
func clock(t time.Time) string { return t.Local().Format("15:04:05.000") }

func (c *deliveryCheck) verdict() (wrong []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wrong
}

// TestFaultResetsAndPausesAtRandom resets and pauses the consumer at random
// while callers fetch and settle through three replicas at random: resets
// from outside (as `nats consumer reset`, to the ack floor or to a random
// sequence below it), pauses through jetgate's Pause on any replica or with
// nats.go, resumes likewise. Nothing is lost, and no settle lands on a
// delivery it was not issued for.
func TestFaultResetsAndPausesAtRandom(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, stream, "orders.>")
	keys := token.RandomKeyring()
	var gs []*gwtest.Replica
	for range 3 {
		gs = append(gs, gateway(t, natstest.Connect(t, ns), keys, 2*time.Second))
	}
	d := driver(gs...)
	d.Answer = randomAnswers
	d.PublishGap = time.Millisecond // so that resets and pauses fall among the deliveries
	// Callers work on what they fetched a while: a reset finds leases held.
	d.Hold = func(r *rand.Rand) time.Duration { return time.Duration(r.IntN(400)) * time.Millisecond }
	check := newDeliveryCheck()
	d.Watch = check
	n := scale(1500, 15000)
	resets, pauses := 0, 0
	r := run(t, d, n, 4, 4*time.Minute, func(ctx context.Context) {
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
		for d.Checker.Report().Published < n && ctx.Err() == nil {
			backoff(ctx, time.Duration(600+rng.IntN(900))*time.Millisecond)
			if resets > 0 && rng.IntN(3) == 0 { // a short run still resets
				pauseAtRandom(ctx, t, rng, nc, gs)
				pauses++
				continue
			}
			resetAtRandom(t, rng, nc)
			resets++
		}
	})
	wrong := check.verdict()
	t.Logf("%d resets, %d pauses", resets, pauses)
	if len(wrong) > 0 {
		t.Fatalf("%d settles landed on a delivery they were not issued for, e.g. %s", len(wrong), wrong[0])
	}
	if resets == 0 || r.Redelivered == 0 {
		t.Fatalf("the run exercised no reset: %d resets, %v", resets, r)
	}
}

// resetAtRandom resets the consumer to its ack floor, or to a sequence
// below it (so nothing is skipped), as `nats consumer reset` does.
func resetAtRandom(t *testing.T, rng *rand.Rand, nc *nats.Conn) {
	t.Helper()
	body := []byte(nil)
	if rng.IntN(2) == 0 {
		floor := consumerInfo(t, nc).AckFloor.Stream
		body = fmt.Appendf(nil, `{"seq":%d}`, 1+rng.Uint64N(floor+1))
	}
	m, err := nc.Request("$JS.API.CONSUMER.RESET."+stream+"."+consumer, body, 5*time.Second)
	if err != nil {
		t.Errorf("reset: %v", err)
		return
	}
	if m.Header.Get("Status") != "" || len(m.Data) == 0 {
		t.Errorf("reset answered %q %v", m.Data, m.Header)
	}
}

// pauseAtRandom pauses the consumer for a moment, through a random replica
// or with nats.go, and resumes it early half the time.
func pauseAtRandom(ctx context.Context, t *testing.T, rng *rand.Rand, nc *nats.Conn, gs []*gwtest.Replica) {
	t.Helper()
	until := time.Now().Add(time.Duration(200+rng.IntN(400)) * time.Millisecond)
	g := gs[rng.IntN(len(gs))]
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if rng.IntN(2) == 0 {
		if _, err := g.Consumers.Pause(cctx, &jetgatev1.PauseRequest{Stream: stream, Consumer: consumer, PauseUntil: timestamppb.New(until)}); err != nil {
			t.Errorf("Pause: %v", err)
			return
		}
	} else {
		js, _ := jetstream.New(nc)
		if _, err := js.PauseConsumer(cctx, stream, consumer, until); err != nil {
			t.Errorf("pause with nats.go: %v", err)
			return
		}
	}
	if rng.IntN(2) == 0 {
		backoff(ctx, time.Until(until)/2)
		if _, err := gs[rng.IntN(len(gs))].Consumers.Resume(cctx, &jetgatev1.ResumeRequest{Stream: stream, Consumer: consumer}); err != nil {
			t.Errorf("Resume: %v", err)
		}
	}
}
