package replica_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/roster"
	"github.com/jetgate/jetgate/internal/token"
)

// A closing replica leaves the roster, last, with a timeout of its own: a
// consumer whose word of a reset waits on a peer that does not answer
// (resetWordWait, 2s, not bounded by the close's) spent the time the naks
// and the roster shared, and the roster's deletes went with an ended
// context: the replica stayed on the roster until its liveness key aged
// out (roster.TTL, 9s), its peers naming it in their words of resets and
// keeping their max_waiting share split (a reviewer's test).
func TestAClosedReplicaLeavesTheRosterWhenItsConsumersTookTheirTime(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	keys := token.RandomKeyring()
	cfg := []consumer.Config{{Stream: "ORDERS", Name: "billing"}}
	regA := prometheus.NewRegistry()
	a := replicaOf(t, ns, keys, replica.Options{Consumers: cfg, RequestTimeout: time.Second, Metrics: regA})
	px := natstest.StartProxy(t, ns.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := replica.New(ctx, replica.Options{Conn: px.Connect(t), Keys: keys, Consumers: cfg, RequestTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	natstest.Eventually(t, 10*time.Second, "a counts b", func() bool {
		m := seriesOf(t, regA, "jetgate_replicas", "billing")
		return m != nil && m.GetGauge().GetValue() == 2
	})
	px.Blackhole() // b, still on the roster for a few seconds, answers no word

	// A reset through a: its word to b waits for b's answer (2s).
	if _, err := a.Seek(ctx, "ORDERS", "billing", replica.SeekTarget{Seq: 1}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	a.Close()
	t.Logf("a's Close took %v", time.Since(began))

	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(ctx, roster.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"live." + a.ID().String(), "serves." + a.ID().String()} {
		if _, err := kv.Get(ctx, k); !errors.Is(err, jetstream.ErrKeyNotFound) && !errors.Is(err, jetstream.ErrKeyDeleted) {
			t.Errorf("roster key %s after a's Close: %v; want it deleted (peers count a until it ages out)", k, err)
		}
	}
}
