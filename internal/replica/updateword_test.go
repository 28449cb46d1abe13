package replica_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// Two replicas on two leaf nodes of the hub's domain. A consumer made
// through the API; replica B leases its message with ack_wait 1m; replica
// A cuts ack_wait to 2s through UpdateConsumer. The server redelivers
// after 2s, and A hands the redelivery out. B's lease must be cut by the
// update (DESIGN 17: its leaseDeadline at or before the server's
// redelivery), so that its Ack is LEASE_EXPIRED rather than acking the
// message A's caller now holds: the hub passes A's request on as $JS.API,
// which B's leaf never sees, so A says it to B (UpdateWordPrefix).
func TestAnUpdateThroughOneLeafIsSeenByTheReplicaOnAnother(t *testing.T) {
	hub, la, lb := startHubAndTwoLeaves(t)
	updateSeenAcross(t, hub, la, lb)
}

// Both replicas on the same leaf node, which sees the request itself.
func TestAnUpdateIsSeenByAReplicaOnTheSameLeaf(t *testing.T) {
	hub, la, _ := startHubAndTwoLeaves(t)
	updateSeenAcross(t, hub, la, la)
}

func updateSeenAcross(t *testing.T, hub, la, lb *server.Server) {
	hc := natstest.Connect(t, hub)
	natstest.Stream(t, hc, "ORDERS", "orders.>")
	keys := token.RandomKeyring()
	admin := &consumer.Admin{Streams: []string{"ORDERS"}, Consumers: []string{"team-*"}}
	ra := replicaOf(t, la, keys, replica.Options{Domain: "hub", Admin: admin})
	rb := replicaOf(t, lb, keys, replica.Options{Domain: "hub", Admin: admin})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := ra.CreateConsumer(ctx, "", "ORDERS", jetstream.ConsumerConfig{Durable: "team-a", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute}); err != nil {
		t.Fatal(err)
	}
	hjs, _ := jetstream.New(hc)
	if _, err := hjs.Publish(ctx, "orders.1", []byte("m")); err != nil {
		t.Fatal(err)
	}
	held, err := rb.Fetch(ctx, "ORDERS", "team-a", consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second})
	if err != nil || len(held.Messages) != 1 {
		t.Fatalf("B's fetch: %+v %v", held, err)
	}
	if _, err := ra.UpdateConsumer(ctx, "", "ORDERS", "team-a", func(c *jetstream.ConsumerConfig) error {
		c.AckWait = 2 * time.Second
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var again consumer.FetchResult
	natstest.Eventually(t, 20*time.Second, "A fetched the server's redelivery", func() bool {
		again, err = ra.Fetch(ctx, "ORDERS", "team-a", consumer.FetchRequest{Batch: 1, Expires: time.Second})
		return err == nil && len(again.Messages) == 1
	})
	out, err := rb.Settle(ctx, settle.Request{Op: lease.OpAck, Stream: "ORDERS", Consumer: "team-a", Tokens: []string{held.Messages[0].Token}})
	if err != nil || !errors.Is(out[0].Err, errs.ErrLeaseExpired) {
		ci, _ := hjs.Consumer(ctx, "ORDERS", "team-a")
		info, _ := ci.Info(ctx)
		t.Fatalf("B's Ack of its lease from before the cut, after A handed the redelivery out: %+v %v; want LEASE_EXPIRED (the hub's ack floor now %d, num_ack_pending %d: A's caller's delivery was acked by B's stale token)",
			out, err, info.AckFloor.Stream, info.NumAckPending)
	}
}
