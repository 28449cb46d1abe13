package replica

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/settle"
)

// fetchOne creates the on-demand consumer name with ackWait, publishes one
// message and fetches it through r.
func fetchOne(t *testing.T, ctx context.Context, r *Replica, s jetstream.Stream, js jetstream.JetStream, name string, ackWait time.Duration) *consumer.Delivery {
	t.Helper()
	if _, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "orders.1", []byte("m")); err != nil {
		t.Fatal(err)
	}
	res, err := r.Fetch(ctx, "ORDERS", name, consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("fetch: %+v %v", res, err)
	}
	return res.Messages[0]
}

// An on-demand consumer is not unbound while its issuer keeps a settled
// lease for retries (DESIGN 2: repeating a settle succeeds): with ack_wait
// longer than idle_unbind, an Ack retried after idle_unbind failed
// LEASE_EXPIRED, the consumer unbound and bound anew with an empty table.
// Once the retention ends, it is unbound.
func TestARetriedAckAfterIdleUnbindSucceeds(t *testing.T) {
	const ackWait = 10 * time.Second
	r, s, js := onDemandEnv(t, 100*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := fetchOne(t, ctx, r, s, js, "team-a", ackWait)
	ack := settle.Request{Op: lease.OpAck, Stream: "ORDERS", Consumer: "team-a", Tokens: []string{m.Token}}
	acked := time.Now()
	if out, err := r.Settle(ctx, ack); err != nil || out[0].Err != nil {
		t.Fatalf("ack: %+v %v", out, err)
	}
	pastIdle(t, r, s)
	if r.bound("ORDERS", "team-a") == nil {
		t.Error("team-a was unbound while it kept a settled lease for retries")
	}
	if out, err := r.Settle(ctx, ack); err != nil || out[0].Err != nil {
		t.Fatalf("the same Ack retried past idle_unbind, within ack_wait: %+v %v; want success", out, err)
	}
	natstest.Eventually(t, ackWait+20*time.Second, "team-a unbound once its settled lease is dropped", func() bool {
		return r.bound("ORDERS", "team-a") == nil
	})
	if d := time.Since(acked); d < ackWait {
		t.Fatalf("team-a unbound %v after the Ack; its settled lease is kept for ack_wait, %v", d, ackWait)
	}
}

// A lease its caller asked to last past idle_unbind (Extend with a
// duration), which its issuer keeps alive with no call, keeps the consumer
// bound: the caller's Ack with the new token succeeds.
func TestALeaseKeptAliveKeepsItsConsumerBound(t *testing.T) {
	r, s, js := onDemandEnv(t, 100*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := fetchOne(t, ctx, r, s, js, "team-e", time.Second)
	d := 30 * time.Second
	out, err := r.Settle(ctx, settle.Request{Op: lease.OpExtend, Stream: "ORDERS", Consumer: "team-e", Tokens: []string{m.Token}, Duration: &d})
	if err != nil || out[0].Err != nil {
		t.Fatalf("extend by 30s: %+v %v", out, err)
	}
	kept := out[0].NewToken
	pastIdle(t, r, s)
	<-time.After(time.Until(m.Deadline.Add(time.Second))) // the server's first deadline: kept alive since
	if r.bound("ORDERS", "team-e") == nil {
		t.Error("team-e was unbound while its issuer kept a lease of it alive")
	}
	out, err = r.Settle(ctx, settle.Request{Op: lease.OpAck, Stream: "ORDERS", Consumer: "team-e", Tokens: []string{kept}})
	if err != nil || out[0].Err != nil {
		t.Fatalf("ack of the kept lease past idle_unbind: %+v %v; want success", out, err)
	}
}
