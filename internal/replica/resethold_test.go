package replica_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natsname"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/roster"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// A reset made from another connection while a replica holds leases and
// receives nothing is seen as its request passes: the stale Ack is
// LEASE_EXPIRED and sends nothing. A peer on the roster that never answers
// the word of it holds back only that consumer's new deliveries, for the
// word's bounded wait: a Fetch and an Ack of another consumer go on
// meanwhile.
func TestAResetSeenAsItPassesHoldsBackOnlyItsConsumer(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs := []consumer.Config{{Stream: "ORDERS", Name: "billing", AckWait: time.Minute}, {Stream: "ORDERS", Name: "audit", AckWait: time.Minute}}
	reg := prometheus.NewRegistry()
	a := replicaOf(t, ns, token.RandomKeyring(), replica.Options{Consumers: cs, Metrics: reg})
	silentPeer(t, js, "ORDERS", "billing")
	natstest.Eventually(t, 10*time.Second, "a counts the silent peer", func() bool {
		u, err := a.Pulls("ORDERS", "billing")
		return err == nil && u.Replicas == 2
	})
	for range 2 {
		if _, err := js.Publish(ctx, "orders.1", []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	stale, err := a.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: time.Second})
	if err != nil || len(stale.Messages) != 1 {
		t.Fatalf("fetch before the reset: %v %v", stale, err)
	}

	if _, err := nc.Request("$JS.API.CONSUMER.RESET.ORDERS.billing", nil, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	// The replica receives nothing: only the request passing can tell it.
	natstest.Eventually(t, 5*time.Second, "a voids its lease as the reset passes", func() bool {
		return testutil.ToFloat64(gaugeOf(t, reg, "jetgate_leases_live", "billing")) == 0
	})
	out, err := a.Settle(ctx, settle.Request{Op: lease.OpAck, Stream: "ORDERS", Consumer: "billing", Tokens: []string{stale.Messages[0].Token}})
	if err != nil || !errors.Is(out[0].Err, errs.ErrLeaseExpired) {
		t.Fatalf("the stale Ack after the reset passed: %v %v; want LEASE_EXPIRED", out, err)
	}

	held := make(chan consumer.FetchResult, 1)
	go func() {
		res, _ := a.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 2, Expires: 10 * time.Second})
		held <- res
	}()
	other, err := a.Fetch(ctx, "ORDERS", "audit", consumer.FetchRequest{Batch: 2, Expires: time.Second})
	if err != nil || len(other.Messages) != 2 {
		t.Fatalf("another consumer's fetch while billing is held back: %v %v", other, err)
	}
	tokens := []string{other.Messages[0].Token, other.Messages[1].Token}
	if out, err := a.Settle(ctx, settle.Request{Op: lease.OpAck, Stream: "ORDERS", Consumer: "audit", Tokens: tokens}); err != nil || out[0].Err != nil || out[1].Err != nil {
		t.Fatalf("another consumer's Ack while billing is held back: %v %v", out, err)
	}
	select {
	case res := <-held:
		t.Fatalf("billing's delivery after the reset was handed out (%d messages) before the peer could void its leases", len(res.Messages))
	default:
	}
	res := <-held // the word gives up on the silent peer
	if len(res.Messages) == 0 {
		t.Fatalf("billing's deliveries after the reset never came")
	}
	ci, err := js.Consumer(ctx, "ORDERS", "billing")
	if err != nil {
		t.Fatal(err)
	}
	if n := ci.CachedInfo().NumAckPending; n != len(res.Messages) {
		t.Fatalf("ack pending %d after the reset, want the %d deliveries made after it", n, len(res.Messages))
	}
}

// silentPeer puts a replica on the roster of stream/name that answers
// nothing.
func silentPeer(t *testing.T, js jetstream.JetStream, stream, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, roster.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "serves.silent", []byte(natsname.Key(stream, name))); err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg("$KV." + roster.Bucket + ".live.silent")
	m.Header.Set(jetstream.MsgTTLHeader, time.Minute.String())
	if _, err := js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
}
