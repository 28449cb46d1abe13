package consumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// settleOne settles d's lease with op and returns its outcome.
func (e *env) settleOne(op lease.Op, d *consumer.Delivery) error {
	e.t.Helper()
	cl, err := e.keys.Open(d.Token, stream, name, "")
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	return e.c.Settle(ctx, op, []token.Claims{cl}, settle.Args{})[0].Err
}

// updateRequest is the body of an update request of the durable to cfg,
// as the server receives it (and the relay hands it to FollowUpdate).
func updateRequest(t *testing.T, cfg jetstream.ConsumerConfig) []byte {
	t.Helper()
	payload, err := json.Marshal(struct {
		Stream string                   `json:"stream_name"`
		Config jetstream.ConsumerConfig `json:"config"`
	}{stream, cfg})
	if err != nil {
		t.Fatal(err)
	}
	return payload
}

// edit changes the durable as an operator does with another tool, from
// the test's own connection, which no part of the Consumer watches.
func (e *env) edit(change func(*jetstream.ConsumerConfig)) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cfg := e.info().Config
	change(&cfg)
	if _, err := e.js.UpdateConsumer(ctx, stream, cfg); err != nil {
		e.t.Fatalf("operator's edit: %v", err)
	}
}

// The Consumer is bound with ack_wait 30s and sees no update request (no
// replica subscribes here). An operator cuts ack_wait to 1s: the server
// redelivers a leased message while its lease still says 27s. The early
// redelivery, or the info a Fetch asks at most once a second, tells the
// Consumer: from then on its leases follow the server's 1s. A Term of the
// first token lands on nothing; the second lease, dated by 30s, is re-dated
// and ends before the server's next redelivery.
func TestLeasesFollowAnAckWaitCutWhileTheyAreOut(t *testing.T) {
	e := start(t, consumer.Config{AckWait: 30 * time.Second})
	e.publish("orders.1", "a")
	first := e.fetch(consumer.FetchRequest{Batch: 1, Expires: time.Second})
	if len(first.Messages) != 1 || time.Until(first.Messages[0].Deadline) < 20*time.Second {
		t.Fatalf("first fetch: %+v; want one lease of about 27s", first)
	}
	e.edit(func(c *jetstream.ConsumerConfig) { c.AckWait = time.Second })

	var again *consumer.Delivery
	natstest.Eventually(t, within, "the server's redelivery, fetched through the Consumer", func() bool {
		res := e.fetch(consumer.FetchRequest{Batch: 1, Expires: time.Second})
		if len(res.Messages) == 1 {
			again = res.Messages[0]
		}
		return again != nil
	})
	if again.Meta.Delivered != 2 {
		t.Fatalf("redelivery counted %d; want 2", again.Meta.Delivered)
	}
	natstest.Eventually(t, within, "the policy change counted", func() bool {
		return e.c.Counts().PolicyChanges.Load() == 1
	})
	if err := e.settleOne(lease.OpTerm, first.Messages[0]); !errors.Is(err, errs.ErrLeaseExpired) {
		t.Fatalf("Term of the first delivery's token: %v; want LEASE_EXPIRED", err)
	}

	e.publish("orders.2", "b")
	fresh := e.fetch(consumer.FetchRequest{Batch: 1, Expires: time.Second})
	if len(fresh.Messages) != 1 || time.Until(fresh.Messages[0].Deadline) > time.Second {
		t.Fatalf("a lease after the edit: %+v; want one of at most the server's 1s", fresh)
	}
	// The redelivery's lease was dated by 30s before the info came: it is
	// re-dated, so it is void by the time the server delivers it again.
	if m := e.pullPlain(5 * time.Second); m == nil {
		t.Fatal("the server did not redeliver the unacked message within 5s")
	} else if md, _ := m.Metadata(); md.Sequence.Stream != again.Meta.StreamSeq {
		_ = m.Nak()
		t.Skipf("the plain pull got stream sequence %d first", md.Sequence.Stream)
	}
	if err := e.settleOne(lease.OpAck, again); !errors.Is(err, errs.ErrLeaseExpired) {
		t.Fatalf("Ack of the redelivery's lease after the server delivered it again: %v; want LEASE_EXPIRED", err)
	}
}

// A backoff the operator sets dates each delivery by its step.
func TestABackoffSetByAnOperatorDatesEachDeliveryByItsStep(t *testing.T) {
	e := start(t, consumer.Config{AckWait: 30 * time.Second})
	e.edit(func(c *jetstream.ConsumerConfig) {
		c.BackOff = []time.Duration{time.Second, 3 * time.Second}
		c.MaxDeliver = 5
	})
	if _, err := e.c.Info(context.Background()); err != nil { // what a GetConsumer asks
		t.Fatal(err)
	}
	e.publish("orders.1", "a")
	first := e.fetch(consumer.FetchRequest{Batch: 1, Expires: time.Second})
	if len(first.Messages) != 1 || time.Until(first.Messages[0].Deadline) > time.Second {
		t.Fatalf("first delivery: %+v; want a lease of at most the first step, 1s", first)
	}
	var second *consumer.Delivery
	natstest.Eventually(t, within, "the second delivery", func() bool {
		res := e.fetch(consumer.FetchRequest{Batch: 1, Expires: time.Second})
		if len(res.Messages) == 1 {
			second = res.Messages[0]
		}
		return second != nil
	})
	if left := time.Until(second.Deadline); second.Meta.Delivered != 2 || left <= time.Second || left > 3*time.Second {
		t.Fatalf("second delivery: delivered %d, %v left; want 2, between 1s and the second step, 3s", second.Meta.Delivered, left)
	}
}

// An edit that leaves the consumer unservable (here the ack wait cannot be
// removed, so a push consumer of the same name made after a delete stands
// for it) answers CONSUMER_NOT_FOUND with the reason.
func TestAConsumerMadeAPushConsumerIsNotFoundWithTheReason(t *testing.T) {
	e := start(t, consumer.Config{AckWait: 30 * time.Second})
	e.publish("orders.1", "a")
	held := e.fetch(consumer.FetchRequest{Batch: 1, Expires: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := e.js.DeleteConsumer(ctx, stream, name); err != nil {
		t.Fatal(err)
	}
	if _, err := e.js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{
		Durable: name, AckPolicy: jetstream.AckExplicitPolicy, DeliverSubject: "push.billing",
	}); err != nil {
		// nats.go's jetstream refuses push consumers: make it raw.
		if _, err := e.nc.Request("$JS.API.CONSUMER.DURABLE.CREATE."+stream+"."+name,
			[]byte(`{"stream_name":"ORDERS","config":{"durable_name":"billing","deliver_subject":"push.billing","ack_policy":"explicit"}}`), within); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.c.Info(ctx); !errors.Is(err, errs.ErrConsumerNotFound) || !strings.Contains(err.Error(), "push consumer") {
		t.Fatalf("info of a consumer made a push consumer: %v; want CONSUMER_NOT_FOUND saying why", err)
	}
	_, err := e.c.Fetch(ctx, consumer.FetchRequest{Batch: 1, Expires: time.Second})
	if !errors.Is(err, errs.ErrConsumerNotFound) || !strings.Contains(err.Error(), "push consumer") {
		t.Fatalf("fetch from a consumer made a push consumer: %v; want CONSUMER_NOT_FOUND saying why", err)
	}
	if err := e.settleOne(lease.OpAck, held.Messages[0]); !errors.Is(err, errs.ErrLeaseExpired) {
		t.Fatalf("Ack of a lease held before: %v; want LEASE_EXPIRED (voided)", err)
	}
}

// An update request that cuts the timing re-dates the leases it cuts as it
// passes, before any info can show it (the server redelivers by the new
// timing the moment it applies it); new leases go back to the server's
// timing once the infos say it held. Here the request never reaches the
// server: the lease stays cut (and so ends within a second), and the next
// lease is dated by 30s again.
func TestAnUpdateRequestCutsTheLeasesAsItPasses(t *testing.T) {
	e := start(t, consumer.Config{AckWait: 30 * time.Second})
	e.publish("orders.1", "a")
	e.publish("orders.2", "b")
	first := e.fetch(consumer.FetchRequest{Batch: 1, Expires: time.Second})
	if len(first.Messages) != 1 || time.Until(first.Messages[0].Deadline) < 20*time.Second {
		t.Fatalf("first fetch: %+v; want one lease of about 27s", first)
	}
	cfg := e.info().Config
	cfg.BackOff = []time.Duration{time.Second, 2 * time.Second}
	payload := updateRequest(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	e.c.FollowUpdate(ctx, payload) // the infos never show it: it gives up after 1.2s and more
	// Cut to backoff[0], 1s from its receipt, the lease has ended; dated by
	// 30s it would still be live.
	if err := e.settleOne(lease.OpTerm, first.Messages[0]); !errors.Is(err, errs.ErrLeaseExpired) {
		t.Fatalf("Term of the first lease after the request passed: %v; want LEASE_EXPIRED", err)
	}
	second := e.fetch(consumer.FetchRequest{Batch: 1, Expires: time.Second})
	if len(second.Messages) != 1 || time.Until(second.Messages[0].Deadline) < 20*time.Second {
		t.Fatalf("second fetch: %+v; want a lease of about 27s again: the server kept 30s", second)
	}
}
