package consumer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
)

// A message a leaving stream gives back is redelivered at once, whatever
// its backoff step: the Nak that the server stores (with a delay, so that
// a NATS restart keeps it) is dated from ack_wait but waits the delivery's
// own step, here 9s more than ack_wait for a second delivery; such a
// delivery is nak'ed plainly.
func TestAGivenBackRedeliveryOfALongerBackoffStepComesBackAtOnce(t *testing.T) {
	e := start(t, consumer.Config{BackOff: []time.Duration{time.Second, 10 * time.Second}, MaxDeliver: 5})
	e.publish("orders.1", "a")
	if r := e.fetch(consumer.FetchRequest{Batch: 1, Expires: time.Second}); len(r.Messages) != 1 {
		t.Fatalf("the first delivery: %+v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var delivered uint64
	err := e.c.Consume(ctx, consumer.ConsumeRequest{MaxMessages: 10, Heartbeat: time.Hour}, func(ds []*consumer.Delivery) error {
		if len(ds) == 0 {
			return nil
		}
		delivered = ds[0].Meta.Delivered
		return errors.New("the caller left")
	})
	if err == nil || delivered != 2 {
		t.Fatalf("the stream: %v, delivery %d; want it to end having had the second delivery", err, delivered)
	}
	r := e.fetch(consumer.FetchRequest{Batch: 1, Expires: 3 * time.Second})
	if len(r.Messages) != 1 || r.Messages[0].Meta.Delivered != 3 {
		t.Fatalf("after the stream gave it back: %+v; want the third delivery within 3s (its step is 10s)", r)
	}
}
