package roster_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/natsname"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/roster"
)

// cKey is the liveness key of a replica "c".
const cKey = "live.c"

// silentReplica puts c's liveness key once, with its TTL, and c's list of
// consumers (ORDERS/billing), as a replica does that joins and then stops
// without a word, waits until a has counted it, and returns when the
// liveness key was put.
func silentReplica(t *testing.T, js jetstream.JetStream, aSees *count) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, roster.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "serves.c", []byte(natsname.Key("ORDERS", "billing"))); err != nil {
		t.Fatal(err)
	}
	put := time.Now()
	m := nats.NewMsg("$KV." + roster.Bucket + "." + cKey)
	m.Header.Set(jetstream.MsgTTLHeader, roster.TTL.String())
	if _, err := js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 5*time.Second, "a counts c", func() bool { return aSees.get() == 2 })
	return put
}

// A replica that stops renewing leaves the others' count when its key ages
// out, by the marker the server leaves: before a replica would forget it by
// itself (its prune, TTL + RenewEvery after it last heard of the key).
func TestRosterDropsASilentReplicaByTheMarkerOfItsKey(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	a := open(t, natstest.Connect(t, ns), "a")
	defer a.Close(context.Background())
	aSees := join(t, a, "ORDERS", "billing")
	put := silentReplica(t, js, aSees)

	pruneAt := put.Add(roster.TTL + roster.RenewEvery) // a heard of the key after put
	natstest.Eventually(t, time.Until(pruneAt), "a drops c by the marker, before its own prune could", func() bool { return aSees.get() == 1 })
	if !time.Now().Before(pruneAt) {
		t.Fatalf("c left a's count %v after its key was put: late enough for a's prune", time.Since(put))
	}
	t.Logf("c left a's count %v after its key was put (key TTL %v)", time.Since(put).Round(time.Millisecond), roster.TTL)
}

// A replica forgets one whose key it has not heard of for longer than a key
// lives even when no marker comes (here the key's message is purged from
// the bucket's stream before it ages out, which tells no watcher).
func TestRosterDropsASilentReplicaWhoseMarkerNeverCame(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	a := open(t, natstest.Connect(t, ns), "a")
	defer a.Close(context.Background())
	aSees := join(t, a, "ORDERS", "billing")
	put := silentReplica(t, js, aSees)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, "KV_"+roster.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSubject("$KV."+roster.Bucket+"."+cKey)); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, roster.TTL+3*roster.RenewEvery, "a forgets c", func() bool { return aSees.get() == 1 })
	if d := time.Since(put); d <= roster.TTL+roster.RenewEvery {
		t.Errorf("c left a's count %v after its key was put: before a prune can forget it, so a marker came after all", d)
	}
}
