package roster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/roster"
)

// A replica that crashes leaves no liveness key behind: the key ages out on
// the server by its own TTL, so that a replica started after does not count
// the crashed one (each replica's prune only forgets what it heard of, and
// deletes no liveness key).
func TestACrashedReplicasLivenessKeyAgesOutOnTheServer(t *testing.T) {
	ns := natstest.Start(t)
	ctx := context.Background()
	js, err := jetstream.New(natstest.Connect(t, ns))
	if err != nil {
		t.Fatal(err)
	}
	a := open(t, natstest.Connect(t, ns), "a")
	defer a.Close(ctx)
	aSees := join(t, a, "ORDERS", "billing")

	cconn := natstest.Connect(t, ns)
	c := open(t, cconn, "c")
	defer c.Close(ctx)
	join(t, c, "ORDERS", "billing")
	natstest.Eventually(t, 5*time.Second, "a counts c", func() bool { return aSees.get() == 2 })
	cconn.Close() // c crashes: no word, no more renewals

	kv, err := js.KeyValue(ctx, roster.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, roster.TTL+2*roster.RenewEvery, "c's liveness key gone from the bucket", func() bool {
		e, err := kv.Get(ctx, "live.c")
		return errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) ||
			(err == nil && e.Operation() != jetstream.KeyValuePut)
	})

	d := open(t, natstest.Connect(t, ns), "d")
	defer d.Close(ctx)
	if n := join(t, d, "ORDERS", "billing").get(); n != 2 {
		t.Fatalf("a replica started after c's key aged out counts %d serving billing; want a and itself", n)
	}
}
