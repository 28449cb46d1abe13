package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/token"
)

// DESIGN 17: a lease's deadline, as a caller is told it, is never after the
// server's redelivery. A delivery handed out some time after it came (kept
// for the next Fetch, or behind a Consume stream's slow reader) carries its
// lease's deadline as the lease table has it then: cut short since by a new
// leader or a shorter ack_wait, not as it came. Its token keeps the deadline
// it came with (a token of the delivery names no earlier one).

// publishUnreadable publishes n messages whose 60 KB header is not UTF-8, so
// that a response counts it four times over: what one pull brings does not
// fit one response.
func (e *env) publishUnreadable(n int) {
	e.t.Helper()
	v := make([]byte, 60_000)
	for i := range v {
		v[i] = "\xffa"[i%2]
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for range n {
		m := nats.NewMsg("orders.bin")
		m.Header.Set("X-Bin", string(v))
		if _, err := e.js.PublishMsg(ctx, m); err != nil {
			e.t.Fatal(err)
		}
	}
}

// claimsOf are what d's token says.
func (e *env) claimsOf(d *consumer.Delivery) token.Claims {
	e.t.Helper()
	cl, err := e.keys.Open(d.Token, stream, name, "")
	if err != nil {
		e.t.Fatal(err)
	}
	return cl
}

// cutBy reports whether d is handed out with a deadline at least cut before
// the one its token carries (the deadline it came with, to the millisecond).
func (e *env) cutBy(d *consumer.Delivery, cut time.Duration) bool {
	e.t.Helper()
	return !d.Deadline.After(e.claimsOf(d).Deadline.Add(-cut + time.Millisecond))
}

// A message that came for a canceled Fetch waits for the next Fetch; a new
// leader elected meanwhile cuts its lease a second short, and the next Fetch
// hands it out so.
func TestAnOrphanHandedOutAfterANewLeaderCarriesItsCutDeadline(t *testing.T) {
	e := start(t, consumer.Config{AckWait: 30 * time.Second, MaxAckPending: 1024})
	e.abandonFetch(consumer.FetchRequest{Batch: 2, Expires: 10 * time.Second}) // open after one message
	e.publish("orders.1", "left behind")
	natstest.Eventually(t, within, "the orphan leased", func() bool { return e.c.Leases() == 1 })
	e.c.LeaderElected()

	got := e.fetch(consumer.FetchRequest{Batch: 1})
	if len(got.Messages) != 1 {
		t.Fatalf("next Fetch: %d messages, want the orphan", len(got.Messages))
	}
	if d := got.Messages[0]; !e.cutBy(d, time.Second) {
		t.Errorf("the orphan is handed out with the deadline it came with (%v from now), not its lease's, cut a second short by the new leader",
			time.Until(d.Deadline).Round(time.Millisecond))
	}
	if err := e.settleOne(lease.OpAck, got.Messages[0]); err != nil { // its token still names it
		t.Errorf("ack of the orphan: %v", err)
	}
}

// The rest of a Fetch that did not fit its response is the next Fetch's
// until a second before its lease ends, then nak'ed back: by its lease as an
// ack_wait cut since left it, not by the deadline it came with (it would be
// dropped at its lease's end unsent, and wait out the server's ack_wait).
func TestTheRestOfAFetchIsNakedBeforeItsCutLeaseEnds(t *testing.T) {
	e := start(t, consumer.Config{AckWait: 30 * time.Second, MaxAckPending: 1024})
	e.publishUnreadable(50)
	first := e.fetch(consumer.FetchRequest{Batch: 50, Expires: time.Second})
	kept := e.c.Orphans()
	if len(first.Messages) == 0 || kept == 0 {
		t.Fatalf("first Fetch: %d messages, %d kept; want some of each", len(first.Messages), kept)
	}
	e.edit(func(cfg *jetstream.ConsumerConfig) { cfg.AckWait = 4 * time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	e.c.FollowUpdate(ctx, updateRequest(t, e.info().Config))

	natstest.Eventually(t, within, "the rest of the Fetch nak'ed before its lease ends", func() bool {
		return e.counted(consumer.OrphanNaked) == float64(kept)
	})
}

// A Consume stream's responses go one after another as its reader takes
// them; a lease cut while the reader was slow goes out cut. The messages
// checked are those leased before the new leader: a pull's first burst may
// fit the first response, and what is leased later is not the point here;
// so the stream is run again, a few times at most, until a response after
// the first carries some.
func TestAConsumeResponseSentAfterANewLeaderCarriesTheCutDeadlines(t *testing.T) {
	for range 5 {
		checked, late := consumeThroughANewLeader(t)
		if late > 0 {
			t.Fatalf("%d of %d messages leased before the new leader and sent after it carry the deadline they came with, not their leases' as it cut them", late, checked)
		}
		if checked > 0 {
			return
		}
	}
	t.Fatal("in 5 streams, no response after the first carried a message leased before the new leader")
}

// consumeThroughANewLeader runs a Consume stream whose first response has
// the consumer elect a new leader while its reader takes it, and counts
// the messages of the later responses leased before that (checked), and
// those of them handed out with the deadline they came with (late).
func consumeThroughANewLeader(t *testing.T) (checked, late int) {
	e := start(t, consumer.Config{AckWait: 30 * time.Second, MaxAckPending: 1024})
	e.publishUnreadable(50)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	responses, sent, before := 0, 0, 0 // before: messages leased before the new leader, not yet sent
	elected := false
	ended := make(chan error, 1)
	go func() {
		ended <- e.c.Consume(ctx, consumer.ConsumeRequest{MaxMessages: 50, Heartbeat: time.Hour}, func(ds []*consumer.Delivery) error {
			if len(ds) == 0 {
				return nil
			}
			responses++
			if !elected {
				// The first response sent while more are leased (a pull's
				// messages that did not fit it: how many come in one read
				// is the machine's business) has the new leader elected
				// while the reader takes its time with it.
				sent += len(ds)
				if before = e.c.Leases() - sent; before > 0 { // sent in order, in the responses that follow
					elected = true
					e.c.LeaderElected()
					responses = 1
				} else if sent >= 50 {
					cancel() // every message went as it came: nothing to check in this stream
				}
				return nil
			}
			for _, d := range ds[:min(before, len(ds))] {
				checked++
				if !e.cutBy(d, time.Second) {
					late++
				}
			}
			before = max(before-len(ds), 0)
			if before == 0 || responses == 3 {
				cancel()
			}
			return nil
		})
	}()
	select {
	case <-ended:
	case <-time.After(within):
		t.Fatal("the stream sent neither its messages nor a third response")
	}
	return checked, late
}
