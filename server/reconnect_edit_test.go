package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
)

// awayReplica is a replica whose connection to NATS goes through a proxy
// the test cuts, with one leased message: what passes on NATS while it is
// cut (away), the replica does not hear.
type awayReplica struct {
	g   *gwtest.Replica
	old *jetgatev1.Message
}

func leaseThenAway(t *testing.T, h *harness, away func()) awayReplica {
	t.Helper()
	p := natstest.StartProxy(t, strings.TrimPrefix(h.ns.ClientURL(), "nats://"))
	nc := p.Connect(t)
	g := gwtest.Start(t, replica.Options{
		Conn:      nc,
		Consumers: []coreconsumer.Config{{Stream: stream, Name: consumer, AckWait: 30 * time.Second, MaxAckPending: 1024}},
		Keys:      h.cfg.keys,
	})
	h.publish(1)
	r := h.fetch(g.Consumers, consumer, 1, 2*time.Second).GetMessages()
	if len(r) != 1 {
		t.Fatalf("fetch: %d messages", len(r))
	}
	p.Cut()
	natstest.Eventually(t, 5*time.Second, "the replica's connection drops", func() bool { return !nc.IsConnected() })
	away()
	p.Mend()
	natstest.Eventually(t, 5*time.Second, "the replica reconnects", func() bool { return nc.IsConnected() })
	return awayReplica{g: g, old: r[0]}
}

// takeOne fetches one message with a plain nats.go client.
func takeOne(t *testing.T, c jetstream.Consumer, within time.Duration) jetstream.MsgMetadata {
	t.Helper()
	b, err := c.Fetch(1, jetstream.FetchMaxWait(within))
	if err != nil {
		t.Fatal(err)
	}
	for m := range b.Messages() {
		md, _ := m.Metadata()
		return *md
	}
	t.Fatalf("the nats.go client got nothing in %v", within)
	return jetstream.MsgMetadata{}
}

// staleAckSettlesNothing acks a's old token through its issuer: it must
// fail LEASE_EXPIRED, send nothing, and leave pending what was pending.
func (a awayReplica) staleAckSettlesNothing(t *testing.T, h *harness, pending int) {
	t.Helper()
	tp := h.tap()
	ar, err := a.g.Consumers.Ack(h.ctx(), &jetgatev1.AckRequest{Stream: stream, Consumer: consumer, Tokens: []string{a.old.GetToken()}})
	if err != nil {
		t.Fatalf("ack: %v", err)
	}
	if n := h.info(consumer).NumAckPending; n != pending {
		t.Errorf("%d pending after the stale Ack, want %d: the token settled a delivery made since; failures %v", n, pending, ar.GetFailures())
	}
	wantFailure(t, ar.GetFailures(), 0, "LEASE_EXPIRED")
	tp.none(t, "the stale Ack")
}

// An operator cuts ack_wait from 30s to 2s while the replica's connection
// is down (a reviewer's finding): the update request passed unheard. The
// server redelivers the leased message after 2s to a nats.go client; the
// first caller's Ack, well within the 28s it was promised, must not ack
// that redelivery: after the reconnect the replica asks the consumer's info
// before it settles, and dates its leases by the 2s wait.
func TestAnAckWaitCutWhileTheReplicaWasAwayIsFollowed(t *testing.T) {
	h := newHarness(t, ackWait(30*time.Second))
	a := leaseThenAway(t, h, func() {
		cfg := h.info(consumer).Config
		cfg.AckWait = 2 * time.Second
		if _, err := h.js.UpdateConsumer(h.ctx(), stream, cfg); err != nil {
			t.Fatal(err)
		}
	})
	plain, err := h.js.Consumer(h.ctx(), stream, consumer)
	if err != nil {
		t.Fatal(err)
	}
	if md := takeOne(t, plain, 10*time.Second); md.NumDelivered != 2 || md.Sequence.Stream != a.old.GetMetadata().GetStreamSeq() {
		t.Fatalf("the nats.go client got %+v; want the redelivery of the leased message", md)
	}
	if left := time.Until(a.old.GetLeaseDeadline().AsTime()); left < 10*time.Second {
		t.Fatalf("the first lease has %v left; the test needs it well within its promised deadline", left)
	}
	a.staleAckSettlesNothing(t, h, 1)
}

// The consumer is deleted and made again under its name while the
// replica's connection is down (a reviewer's finding): the delete advisory
// passed unheard. The new consumer's info, asked after the reconnect, has a
// later creation time: the old leases are void, and the old token's Ack
// does not ack the new consumer's delivery a nats.go client holds.
func TestAConsumerRemadeWhileTheReplicaWasAwayVoidsItsLeases(t *testing.T) {
	h := newHarness(t, ackWait(30*time.Second))
	var plain jetstream.Consumer
	a := leaseThenAway(t, h, func() {
		plain = h.recreate(consumer, jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second})
	})
	if md := takeOne(t, plain, 5*time.Second); md.NumDelivered != 1 || md.Sequence.Stream != a.old.GetMetadata().GetStreamSeq() {
		t.Fatalf("the nats.go client got %+v; want the new consumer's first delivery of the leased message", md)
	}
	a.staleAckSettlesNothing(t, h, 1)
}

// The consumer is reset while the replica's connection is down: the reset
// request passed unheard. Asked after the reconnect, before the reset's
// deliveries, the info counts fewer deliveries than the replica received:
// the old token's Ack fails LEASE_EXPIRED rather than ack the message the
// reset gives back, and the message is delivered again. (A reset followed
// by as many deliveries as the replica had received is not seen so: the
// README says so.)
func TestAResetWhileTheReplicaWasAwayVoidsItsLeases(t *testing.T) {
	h := newHarness(t, ackWait(30*time.Second))
	a := leaseThenAway(t, h, func() { h.resetConsumer(consumer) })
	a.staleAckSettlesNothing(t, h, 0)
	plain, err := h.js.Consumer(h.ctx(), stream, consumer)
	if err != nil {
		t.Fatal(err)
	}
	if md := takeOne(t, plain, 5*time.Second); md.NumDelivered != 1 || md.Sequence.Stream != a.old.GetMetadata().GetStreamSeq() {
		t.Fatalf("the nats.go client got %+v; want the reset's delivery of the leased message", md)
	}
}
