package replica_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

// Consumers with a dead letter, idle, cost what the others do: the stream
// where the advisories of a consumer set aside wait is looked at once as a
// replica starts, and heard of by a plain subscription, never asked.
func TestIdleReplicasOfManyDeadLetteredConsumersAskAlmostNothing(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	natstest.Stream(t, nc, "DLQ", "dlq.>")
	var cs []consumer.Config
	for i := range 300 {
		cs = append(cs, consumer.Config{Stream: "ORDERS", Name: fmt.Sprintf("c%d", i),
			DeadLetter: &consumer.DeadLetter{Subject: fmt.Sprintf("dlq.c%d", i), OnTerm: true}})
	}
	keys := token.RandomKeyring()
	a := replicaOf(t, ns, keys, replica.Options{Consumers: cs})
	replicaOf(t, ns, keys, replica.Options{Consumers: cs})
	natstest.Eventually(t, 10*time.Second, "the replicas see each other", func() bool {
		u, err := a.Pulls("ORDERS", "c299")
		return err == nil && u.Replicas == 2
	})
	rq := countRequests(t, ns)
	const window = 4 * time.Second
	total, kinds := rq.during(window)
	t.Logf("2 idle replicas of 300 dead-lettered consumers, %v: %d requests %v", window, total, kinds)
	if perSecond := float64(total) / window.Seconds(); perSecond > 1 {
		t.Fatalf("%.1f requests a second from idle replicas (%v); want at most 1", perSecond, kinds)
	}
}
