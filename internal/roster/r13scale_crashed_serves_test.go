package roster_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/roster"
)

// A replica killed without a word leaves no list of what it served behind
// once its liveness key has aged out: a platform team's pods killed one
// after another (OOM, a lost node) each left serves.<id> in the bucket for
// good, every consumer key it served, which every replica started since
// read at its start and kept in memory.
func TestACrashedReplicasListAgesOutWithItsLivenessKey(t *testing.T) {
	ns := natstest.Start(t)
	ctx := context.Background()
	js, err := jetstream.New(natstest.Connect(t, ns))
	if err != nil {
		t.Fatal(err)
	}
	a := open(t, natstest.Connect(t, ns), "a")
	defer a.Close(ctx)
	aSees := join(t, a, "ORDERS", "team-0")

	cconn := natstest.Connect(t, ns)
	c := open(t, cconn, "c")
	defer c.Close(ctx)
	for i := range 100 {
		join(t, c, "ORDERS", fmt.Sprintf("team-%d", i))
	}
	natstest.Eventually(t, 5*time.Second, "a counts c", func() bool { return aSees.get() == 2 })
	cconn.Close() // c is killed: no word, no more renewals
	natstest.Eventually(t, roster.TTL+2*roster.RenewEvery, "a no longer counts c", func() bool { return aSees.get() == 1 })

	kv, err := js.KeyValue(ctx, roster.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 2*roster.RenewEvery, "c's list gone from the bucket", func() bool {
		_, err := kv.Get(ctx, "serves.c")
		return errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted)
	})
}

// A replica still running whose list a peer removed (its liveness key aged
// out while NATS was out of its reach) writes it again: its peers count it
// once more, and do not take its part of max_waiting as well as their own.
func TestAListRemovedUnderARunningReplicaIsWrittenAgain(t *testing.T) {
	ns := natstest.Start(t)
	ctx := context.Background()
	js, err := jetstream.New(natstest.Connect(t, ns))
	if err != nil {
		t.Fatal(err)
	}
	a := open(t, natstest.Connect(t, ns), "a")
	defer a.Close(ctx)
	aSees := join(t, a, "ORDERS", "billing")
	b := open(t, natstest.Connect(t, ns), "b")
	defer b.Close(ctx)
	join(t, b, "ORDERS", "billing")
	natstest.Eventually(t, 5*time.Second, "a counts b", func() bool { return aSees.get() == 2 })

	kv, err := js.KeyValue(ctx, roster.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, "serves.b"); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 5*time.Second, "a no longer counts b", func() bool { return aSees.get() == 1 })
	natstest.Eventually(t, 2*roster.RenewEvery, "b writes its list again and a counts it", func() bool { return aSees.get() == 2 })
}
