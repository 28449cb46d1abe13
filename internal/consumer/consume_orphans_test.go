package consumer_test

import (
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
)

// A message that a canceled Fetch's pull takes while a Consume stream waits
// on a pull of its own goes to the stream, as its first delivery: it is not
// left to be nak'ed (a delivery burned) once the abandoned pull ends.
func TestOrphanGoesToAConsumeStreamAlreadyWaiting(t *testing.T) {
	restore := consumer.SetConsumeMaxWait(time.Minute)
	t.Cleanup(restore)
	e := start(t, consumer.Config{AckWait: 30 * time.Second, MaxAckPending: 100})
	e.abandonFetch(consumer.FetchRequest{Batch: 1, Expires: time.Minute})
	sent := make(chan []*consumer.Delivery, 4)
	consumeInto(t, e, consumer.ConsumeRequest{MaxMessages: 10, Heartbeat: time.Hour}, sent, nil)
	natstest.Eventually(t, within, "both pulls waiting on the server", func() bool { return e.info().NumWaiting == 2 })

	// The server hands it to the oldest pull: the canceled Fetch's.
	seq := e.publish("orders.1", "for the waiting stream")
	var ds []*consumer.Delivery
	select {
	case ds = <-sent:
	case <-time.After(within):
		t.Fatal("the waiting Consume stream did not get the message the canceled Fetch's pull took")
	}
	if len(ds) != 1 || ds[0].Meta.StreamSeq != seq || ds[0].Meta.Delivered != 1 {
		t.Fatalf("the stream got %d messages, first seq %d delivery %d; want seq %d delivery 1", len(ds), ds[0].Meta.StreamSeq, ds[0].Meta.Delivered, seq)
	}
	if h := e.counted(consumer.OrphanHanded); h != 1 {
		t.Errorf("orphans handed: %v, want 1", h)
	}
	if n := e.counted(consumer.OrphanNaked); n != 0 {
		t.Errorf("orphans nak'ed: %v, want 0", n)
	}
}
