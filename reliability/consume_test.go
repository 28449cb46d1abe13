package reliability

import (
	"context"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/token"
)

// streaming is the StreamMode of these scenarios: 50 leases a stream, a
// heartbeat a second, a new stream 100ms after one fails.
func streaming(end func(r *rand.Rand) (time.Duration, bool, bool)) *StreamMode {
	return &StreamMode{MaxMessages: 50, Heartbeat: time.Second, Reopen: 100 * time.Millisecond, End: end}
}

// outage is one NATS restart: when the server was shut down, and when it
// was ready again.
type outage struct{ down, back time.Time }

// TestFaultConsumeNATSRestart is TestFaultNATSRestartMidTraffic with Consume
// streams: the server is shut down mid-traffic and restarted on the same
// store and port. Every stream open at the shutdown must end with
// UNAVAILABLE within seconds (a stream whose pulls see no server must not
// hang on heartbeats of its own), and the streams opened again must pick up
// the traffic. A tenth of the streams' callers go away on their own.
func TestFaultConsumeNATSRestart(t *testing.T) {
	const endBound = 10 * time.Second
	dir := t.TempDir()
	ns := natstest.StartIn(t, dir, -1)
	port := ns.Addr().(*net.TCPAddr).Port
	nc := natstest.Connect(t, ns, reconnecting()...)
	natstest.Stream(t, nc, stream, "orders.>")
	d := driver(gateway(t, nc, token.RandomKeyring(), 5*time.Second))
	d.Streaming = streaming(func(r *rand.Rand) (time.Duration, bool, bool) {
		if r.IntN(100) < 10 {
			return time.Duration(r.Int64N(int64(2 * time.Second))), true, true
		}
		return 0, false, false
	})
	n, rounds := scale(3000, 20000), scale(1, 4)
	var mu sync.Mutex
	var outages []outage
	start := time.Now()
	r := run(t, d, n, 4, 3*time.Minute, func(ctx context.Context) {
		for i := 1; i <= rounds && ctx.Err() == nil; i++ {
			waitPublished(ctx, d.Checker, i*n/(rounds+1))
			down := time.Now()
			ns.Shutdown()
			ns.WaitForShutdown()
			backoff(ctx, 500*time.Millisecond) // an outage, not a blip
			ns = natstest.StartIn(t, dir, port)
			mu.Lock()
			outages = append(outages, outage{down: down, back: time.Now()})
			mu.Unlock()
		}
	})
	took := time.Since(start)
	if r.DupAfterAck != 0 {
		t.Fatalf("dup_after_ack %d", r.DupAfterAck)
	}
	assertDrained(t, nc, r)

	recs := d.StreamRecords()
	t.Logf("%d streams in %v: %s; settle outcomes per token: %s", len(recs), took.Round(time.Millisecond),
		streamSummary(recs), formatCounts(d.Stats().Outcomes))
	if len(outages) != rounds {
		t.Fatalf("%d restarts of %d", len(outages), rounds)
	}
	var longest time.Duration
	for i, o := range outages {
		var cut, during, survived int
		var slowest time.Duration
		for _, s := range recs {
			// A stream that ended after the next shutdown lived through
			// this one, whatever ended it then.
			endedLater := i+1 < len(outages) && (s.Ended.IsZero() || s.Ended.After(outages[i+1].down))
			switch {
			case !s.Opened.Before(o.down) || (!s.Ended.IsZero() && s.Ended.Before(o.down)):
				if s.Opened.Before(o.back) && !s.Opened.Before(o.down) {
					during++
				}
				continue // not open at the shutdown
			case s.Vanished && (s.Ended.IsZero() || s.Ended.Sub(o.down) < endBound):
				continue // its caller went away first
			case !s.Failed() || endedLater:
				// Its caller ended it after the bound, or the run did. It
				// lived through the outage: fine if it was never cut off
				// (it had no pull to make), a hang if it delivered nothing
				// once NATS was back.
				survived++
				if !s.LastMessage.After(o.back) {
					t.Errorf("restart %d: a stream opened %v before the shutdown outlived it (%s) and delivered nothing after it (last response %v after the shutdown)",
						i+1, o.down.Sub(s.Opened).Round(time.Millisecond), endOf(s), s.LastResponse.Sub(o.down).Round(time.Millisecond))
				}
				continue
			}
			cut++
			after := s.Ended.Sub(o.down)
			slowest = max(slowest, after)
			if s.Code != codes.Unavailable || after > endBound {
				t.Errorf("restart %d: a stream open at the shutdown ended %v after it with %v (%s); want UNAVAILABLE within %v",
					i+1, after.Round(time.Millisecond), s.Code, s.Err, endBound)
			}
		}
		// The traffic moved to streams opened after the restart.
		var pickedUp time.Duration = -1
		for _, s := range recs {
			if !s.Opened.Before(o.back) && !s.FirstMessage.IsZero() {
				if w := s.FirstMessage.Sub(o.back); pickedUp < 0 || w < pickedUp {
					pickedUp = w
				}
			}
		}
		t.Logf("restart %d: %d streams open at the shutdown ended, the last %v after it; %d outlived it and delivered after it; %d opened during the outage; first message on a new stream %v after NATS was back",
			i+1, cut, slowest.Round(time.Millisecond), survived, during, pickedUp.Round(time.Millisecond))
		if cut == 0 {
			t.Errorf("restart %d cut no stream", i+1)
		}
		if pickedUp < 0 {
			t.Errorf("restart %d: no stream opened after it received a message", i+1)
		}
		longest = max(longest, slowest)
	}
	t.Logf("longest from a shutdown to the end of a stream it cut: %v (bound %v)", longest.Round(time.Millisecond), endBound)
	back, waiting := d.Returns()
	p50, p99, mx := quantiles(back)
	unseen, gap := d.Unseen()
	t.Logf("messages left with streams their callers canceled: %d back (p50 %v, p99 %v, max %v), %d not; deliveries no caller saw: %d (at most %d in a row); messages first handed out 4s or more after their publish (ack_wait 5s): %d",
		len(back), p50, p99, mx, waiting, unseen, gap, d.Checker.WaitedAtLeast(4*time.Second))
}

// TestFaultConsumeCallersVanish opens streams that their callers end at a
// random moment while messages flow: 40% of them go away holding what they
// were working on, the rest read no more, answer what they hold and close.
// With ack_wait 30s, only the give-back at the end of a stream (DESIGN
// section 9) explains a message that comes back within seconds.
func TestFaultConsumeCallersVanish(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, stream, "orders.>")
	const ackWait = 30 * time.Second
	d := driver(gateway(t, nc, token.RandomKeyring(), ackWait))
	d.Answer = answersWithoutSilence
	d.PublishGap = time.Millisecond // messages flow while streams end
	d.Hold = func(r *rand.Rand) time.Duration { return time.Duration(r.Int64N(int64(200 * time.Millisecond))) }
	d.Streaming = streaming(func(r *rand.Rand) (time.Duration, bool, bool) {
		return time.Duration(r.Int64N(int64(2 * time.Second))), r.IntN(100) < 40, true
	})
	n := scale(2000, 10000)
	start := time.Now()
	r := run(t, d, n, 8, 3*time.Minute, nil)
	took := time.Since(start)
	recs := d.StreamRecords()
	back, waiting := d.Returns()
	p50, p99, mx := quantiles(back)
	abandoned, vanished, left := 0, 0, 0
	for _, s := range recs {
		if s.Vanished {
			vanished++
			abandoned += s.Abandoned
		} else {
			left += s.Abandoned
		}
	}
	late := d.Checker.WaitedAtLeast(ackWait)
	unseen, gap := d.Unseen()
	t.Logf("%d streams in %v: %s; settle outcomes per token: %s", len(recs), took.Round(time.Millisecond),
		streamSummary(recs), formatCounts(d.Stats().Outcomes))
	t.Logf("%d callers vanished holding %d messages, and closing callers left %d unread; %d came back: p50 %v, p99 %v, max %v after the cancel (ack_wait %v); %d did not",
		vanished, abandoned, left, len(back), p50, p99, mx, ackWait, waiting)
	t.Logf("messages first handed out ack_wait or more after their publish: %d; deliveries no caller saw: %d (at most %d in a row)", late, unseen, gap)
	if r.DupAfterAck != 0 {
		t.Fatalf("dup_after_ack %d", r.DupAfterAck)
	}
	if vanished == 0 || len(back) == 0 || r.Redelivered == 0 || r.Termed == 0 {
		t.Fatalf("the run did not exercise what it is for: %d vanished, %d abandoned messages back; %v", vanished, len(back), r)
	}
	// Every message left with a canceled stream came back (else it was
	// lost), and in seconds: the stream's end gave it back, it did not wait
	// out ack_wait.
	if waiting != 0 || mx > ackWait/3 {
		t.Fatalf("messages left with canceled streams: %d never came back, p99 %v, max %v; want all back well within ack_wait %v",
			waiting, p99, mx, ackWait)
	}
	// A stream keeps what it sent until it is settled, so nothing, not
	// even a batch in flight when its caller went away, waits out ack_wait.
	if late != 0 {
		t.Fatalf("%d messages were first handed out ack_wait or more after their publish: a stream's end stranded them", late)
	}
	for _, s := range recs {
		if s.Failed() {
			t.Errorf("a stream failed: %s", endOf(s))
		}
	}
	assertDrained(t, nc, r)
}

// answersWithoutSilence is randomAnswers but every message is answered: an
// unanswered one would wait out the 30s ack_wait.
func answersWithoutSilence(r *rand.Rand, _ uint64) Action {
	switch p := r.IntN(100); {
	case p < 60:
		return Ack
	case p < 75:
		return Nak
	case p < 85:
		return NakDelay
	default:
		return Term
	}
}

// streamSummary counts the streams by how they ended.
func streamSummary(recs []StreamRecord) string {
	counts := make(map[string]int)
	for _, s := range recs {
		counts[endOf(s)]++
	}
	return formatCounts(counts)
}

func endOf(s StreamRecord) string {
	switch {
	case s.Ended.IsZero():
		return "open"
	case s.Vanished:
		return "vanished"
	case s.Closed:
		return "closed"
	}
	return "failed " + s.Code.String()
}
