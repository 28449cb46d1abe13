package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
)

// When a Consume stream's caller leaves while the stream's pull is open on
// the server, the leases it held are nak'ed only once that pull has ended:
// nak'ed before, a message would go straight back into the dead pull and
// burn a delivery. Here the open pull ends by its expiry (3s), and the held
// message is then nak'ed, still on its first delivery.
func TestEndedConsumeNaksItsLeasesOnlyOnceItsPullHasEnded(t *testing.T) {
	t.Cleanup(consumer.SetConsumeMaxWait(3 * time.Second))
	e := start(t, consumer.Config{AckWait: time.Minute, MaxAckPending: 1024})
	tp := startTap(t, e.ns)
	seq := e.publish("orders.1", "held when the stream ends")

	sent := make(chan []*consumer.Delivery, 16)
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_ = e.c.Consume(ctx, consumer.ConsumeRequest{MaxMessages: 2, Heartbeat: time.Hour}, func(ds []*consumer.Delivery) error {
			if len(ds) > 0 {
				sent <- ds
			}
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-ended
	})
	if held := receiveBatch(t, sent, "the message"); len(held) != 1 || held[0].Meta.StreamSeq != seq {
		t.Fatalf("the stream was sent %d messages, want seq %d", len(held), seq)
	}
	delivered := tp.waitFor(t, 0, "the delivery of the message", func(m *nats.Msg) bool {
		d, ok := deliveryOf(m, seq)
		return ok && d == 1
	})
	// Holding one of two, the stream pulls for the other: that pull waits.
	req := tp.waitFor(t, delivered, "the stream's next pull request", pullRequest)
	inbox := tp.before(req + 1)[req].Reply
	natstest.Eventually(t, within, "the stream's next pull waiting on the server", func() bool { return e.info().NumWaiting == 1 })
	cancel()
	select {
	case <-ended:
	case <-time.After(within):
		t.Fatal("the stream did not end when its caller left")
	}

	naked := tp.waitFor(t, req, "the -NAK of the held message", func(m *nats.Msg) bool {
		_, ok := settleOf(m, seq, "-NAK")
		return ok
	})
	pullEnded := false
	for _, m := range tp.before(naked + 1)[req:] {
		if endOf(m, inbox) {
			pullEnded = true
		}
		if d, ok := deliveryOf(m, seq); ok && d > 1 {
			t.Fatalf("the held message came back as delivery %d (into inbox %s, the open pull's is %s): it was nak'ed while the pull was open", d, m.Subject, inbox)
		}
		if d, ok := settleOf(m, seq, "-NAK"); ok && !pullEnded {
			t.Fatalf("delivery %d was nak'ed while the stream's pull was still open on the server", d)
		}
	}
}
