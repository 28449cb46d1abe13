package consumer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/pull"
)

// An abandoned pull keeps the marks the reset rules move as its deliveries
// come (reset.go): the orphan pool hands each delivery in with the pull's
// own mark, where the one before left it, not a copy taken when the pull
// was abandoned.
func TestAnAbandonedPullKeepsItsMarks(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	p, err := pull.Start(nc, pull.NextSubject(pull.API(""), "ORDERS", "billing"), pull.NewRequest(10, 5*time.Second, 0, pull.Priority{}), func() {})
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var lasts []uint64 // the pull's last consumer sequence as each delivery came
	o := newOrphanPool(func(m *seqMark, msg pull.Msg) (*Delivery, bool) {
		mu.Lock()
		defer mu.Unlock()
		md, err := pull.ParseAckSubject(msg.Reply)
		if err != nil {
			t.Errorf("ack subject %q: %v", msg.Reply, err)
			return nil, false
		}
		lasts = append(lasts, m.Last)
		m.Last = md.ConsumerSeq
		return &Delivery{Meta: md}, true
	}, func(*Delivery, time.Time) bool { return true })
	o.abandon(markedPull{Pull: p}, time.Now())

	for n := 1; n <= 2; n++ {
		if _, err := js.Publish(ctx, "orders.1", []byte("m")); err != nil {
			t.Fatal(err)
		}
		natstest.Eventually(t, 10*time.Second, "the delivery taken in", func() bool {
			o.pulls(time.Now()) // drains the open pulls
			mu.Lock()
			defer mu.Unlock()
			return len(lasts) == n
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if lasts[0] != 0 || lasts[1] != 1 {
		t.Fatalf("the pull's last consumer sequence as its deliveries came: %v; want [0 1]", lasts)
	}
	if n := o.len(); n != 2 {
		t.Fatalf("%d orphans held, want 2", n)
	}
}
