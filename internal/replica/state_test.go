package replica_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/roster"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// jetgate's own buckets (the settle ledger, the roster) have as many
// replicas as the most replicated stream it serves, and a replica that
// serves the same R3 consumers on demand alone (which it cannot count at
// its start) keeps them so: it scaled the shared ledger down to R1 under
// the replica that made it R3.
func TestAnOnDemandReplicaKeepsTheBucketsReplicas(t *testing.T) {
	nodes := natstest.StartCluster(t, 3)
	nc := natstest.Connect(t, nodes[0])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	replicasOf := func(bucket string) int {
		s, err := js.Stream(ctx, "KV_"+bucket)
		if err != nil {
			t.Fatal(err)
		}
		return s.CachedInfo().Config.Replicas
	}
	keys := token.RandomKeyring()
	replicaOf(t, nodes[0], keys, replica.Options{Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing"}}})
	if got := replicasOf(settle.LedgerBucket); got != 3 {
		t.Fatalf("after the configured replica: ledger R%d; want R3", got)
	}
	replicaOf(t, nodes[1], keys, replica.Options{OnDemand: consumer.OnDemand{Match: []consumer.Match{{Stream: "ORDERS", Consumer: "*"}}}})
	for _, bucket := range []string{settle.LedgerBucket, roster.Bucket} {
		if got := replicasOf(bucket); got != 3 {
			t.Errorf("after an on-demand replica of the same R3 stream started: %s R%d; want R3", bucket, got)
		}
	}
}
