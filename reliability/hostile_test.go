package reliability

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/deadletter"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

// Hostile traffic from other NATS clients, mixed into the usual: messages
// whose subject or headers are not UTF-8 (each must be delivered and acked
// like any other: lost 0), and forged dead letters naming subjects outside
// the consumer's stream, redriven all the while. Nothing is published
// outside the stream: no stream API call, nothing stored in another stream.
//
// A poison message counts as published once the stream confirmed it, as
// the driver's own do, so that first_wait is a wait in jetgate, not the
// time since the run began (RELIABILITY.md, "first_wait of the poison
// messages"); redrives run in a loop of their own, since each reads every
// letter and the forged ones stay: one after each poison message paced the
// poison by a call that grew with the run.
func TestFaultForgedDeadLettersAndPoisonMessages(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, stream, "orders.>")
	natstest.Stream(t, nc, "DLQ", "dlq.>")
	other := natstest.Stream(t, nc, "OTHER", "other.>")
	// Only the calls no redrive may make: a watch of all of $JS.API.STREAM.>
	// overflowed in the long form (a redrive reads each letter with one
	// MSG.GET) and dropped what it would have had to catch.
	watch := natstest.Connect(t, ns)
	var api []*nats.Subscription
	for _, s := range []string{"$JS.API.STREAM.PURGE.>", "$JS.API.STREAM.DELETE.>"} {
		sub, err := watch.SubscribeSync(s)
		if err != nil {
			t.Fatal(err)
		}
		api = append(api, sub)
	}
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	g := gwtest.Start(t, replica.Options{
		Conn: natstest.Connect(t, ns, reconnecting()...),
		Consumers: []coreconsumer.Config{{Stream: stream, Name: consumer, AckWait: 5 * time.Second, MaxAckPending: 1024,
			DeadLetter: &coreconsumer.DeadLetter{Subject: "dlq.billing"}}},
		Keys: token.RandomKeyring(), RequestTimeout: time.Second, Logger: testLogger(t),
	})
	d := driver(g)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	n, poison := scale(600, 5000), scale(60, 500)
	forged := []string{"$JS.API.STREAM.PURGE.ORDERS", "$JS.API.STREAM.DELETE.OTHER", "other.x", "orders.*", "_INBOX.x", "dlq.billing"}
	var redrives int
	var slowest time.Duration // of a redrive; both read once run has returned
	redrive := func(ctx context.Context) {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		start := time.Now()
		resp, err := g.Consumers.Redrive(rctx, &jetgatev1.RedriveRequest{Stream: stream, Consumer: consumer})
		redrives, slowest = redrives+1, max(slowest, time.Since(start))
		if err == nil && resp.GetRedriven() != 0 {
			t.Errorf("a forged dead letter was redriven: %v", resp)
		}
	}
	r := run(t, d, n, 4, 3*time.Minute, func(ctx context.Context) {
		// Attempted from the start, so that no delivery of one is
		// unexpected; published when the stream confirms it. All are in
		// by the middle of the publishing, long before the driver stops
		// (once its own publishing is over and every confirmed publish is
		// settled); that all went in is checked after the run.
		id := func(i int) string { return t.Name() + "-poison-" + strconv.Itoa(i) }
		for i := range poison {
			d.Checker.Attempt(id(i))
		}
		poisoned := make(chan struct{})
		sent := 0 // poison messages in the stream; read once poisoned is closed
		go func() {
			defer close(poisoned)
			for i := 0; i < poison && ctx.Err() == nil; i++ {
				waitPublished(ctx, d.Checker, i+i*n/(2*poison))
				m := &nats.Msg{Subject: "orders.\xff" + strconv.Itoa(i), Data: []byte(id(i)), Header: nats.Header{"X-Bad": {"\xfe\xff"}}}
				if _, err := js.PublishMsg(ctx, m); err != nil {
					t.Errorf("publish poison: %v", err)
					return
				}
				d.Checker.Published(id(i), time.Now())
				sent++
				h := nats.Header{deadletter.HeaderStream: {stream}, deadletter.HeaderConsumer: {consumer},
					deadletter.HeaderSubject: {forged[i%len(forged)]}}
				if err := nc.PublishMsg(&nats.Msg{Subject: "dlq.billing", Data: []byte("forged"), Header: h}); err != nil {
					t.Errorf("forge: %v", err)
					return
				}
			}
		}()
		// Redrives all the while, in a loop of their own, until the
		// publishing is over, and once more after the last forged letter.
		for over := false; ctx.Err() == nil && !over; {
			select {
			case <-poisoned:
				over = d.Checker.Report().Published >= n+sent
			default:
			}
			redrive(ctx)
			backoff(ctx, 50*time.Millisecond)
		}
		<-poisoned
	})
	t.Logf("%d redrives, the slowest %v: each reads every letter, and the %d forged ones stay", redrives, slowest, poison)
	if r.Published != n+poison {
		t.Fatalf("published %d, want %d and %d poison messages", r.Published, n, poison)
	}
	assertDrained(t, nc, r)
	if info, err := other.Info(context.Background()); err != nil || info.State.Msgs != 0 {
		t.Fatalf("stream OTHER: %+v %v; want nothing stored", info, err)
	}
	for _, sub := range api {
		if m, err := sub.NextMsg(0); err == nil {
			t.Fatalf("a redrive called the stream API: %s", m.Subject)
		}
		if dropped, err := sub.Dropped(); dropped != 0 || err != nil {
			t.Fatalf("the watch of %s dropped %d calls (%v)", sub.Subject, dropped, err)
		}
	}
}
