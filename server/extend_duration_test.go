package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// Extend with a duration of several ack_waits, sent through a replica that
// did not issue the lease: the issuer keeps the lease alive that long (the
// server redelivers nothing meanwhile), the answer carries the deadline
// asked for and a token that settles the same delivery after it.
func TestExtendByADurationKeepsTheLeaseThatLong(t *testing.T) {
	h := newHarness(t, ackWait(time.Second))
	_, other, _ := h.startGateway()
	h.publish(1)
	m := h.fetchOne(time.Second)
	asked := time.Now()
	resp, err := other.Extend(h.ctx(), &jetgatev1.ExtendRequest{
		Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()}, Duration: durationpb.New(4 * time.Second),
	})
	if err != nil || len(resp.GetLeases()) != 1 || len(resp.GetFailures()) != 0 {
		t.Fatalf("extend by 4s: %v %v", resp, err)
	}
	l := resp.GetLeases()[0]
	if dl := l.GetLeaseDeadline().AsTime(); dl.Before(asked.Add(4*time.Second-50*time.Millisecond)) || dl.After(time.Now().Add(4*time.Second)) {
		t.Fatalf("lease deadline %v; want 4s after the Extend (%v)", dl, asked)
	}
	if l.GetNewToken() == "" || l.GetNewToken() == m.GetToken() {
		t.Fatalf("new token %q; want a new one", l.GetNewToken())
	}
	list, err := h.cons.ListLeases(h.ctx(), &jetgatev1.ListLeasesRequest{Stream: stream, Consumer: consumer})
	if err != nil || len(list.GetHolders()) != 1 {
		t.Fatalf("list leases: %v %v", list, err)
	}
	if hl := list.GetHolders()[0]; hl.GetKept() != 1 || !hl.GetLatestDeadline().AsTime().Equal(l.GetLeaseDeadline().AsTime()) {
		t.Fatalf("the lease listed: kept %d, latest deadline %v; want 1, %v", hl.GetKept(), hl.GetLatestDeadline().AsTime(), l.GetLeaseDeadline().AsTime())
	}
	// Three ack_waits later the server has redelivered nothing.
	plain, err := h.js.Consumer(h.ctx(), stream, consumer)
	if err != nil {
		t.Fatal(err)
	}
	b, err := plain.Fetch(1, jetstream.FetchMaxWait(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for got := range b.Messages() {
		md, _ := got.Metadata()
		t.Fatalf("the server redelivered a kept lease's message: %+v", md)
	}
	ack, err := h.cons.Ack(h.ctx(), &jetgatev1.AckRequest{Stream: stream, Consumer: consumer, Tokens: []string{l.GetNewToken()}})
	if err != nil || len(ack.GetFailures()) != 0 {
		t.Fatalf("ack of the kept lease after three ack_waits: %v %v", ack, err)
	}
	if ci := h.info(consumer); ci.NumAckPending != 0 || ci.NumRedelivered != 0 {
		t.Fatalf("after the ack: ack pending %d, redelivered %d; want 0, 0", ci.NumAckPending, ci.NumRedelivered)
	}
}

// Extend with 0s gives the message back at once: the server redelivers it
// long before its 30s ack_wait, and the answer says when it went back.
func TestExtendByZeroGivesTheMessageBack(t *testing.T) {
	h := newHarness(t)
	h.publish(1)
	m := h.fetchOne(time.Second)
	resp, err := h.cons.Extend(h.ctx(), &jetgatev1.ExtendRequest{
		Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()}, Duration: durationpb.New(0),
	})
	if err != nil || len(resp.GetLeases()) != 1 || resp.GetLeases()[0].GetNewToken() != "" {
		t.Fatalf("extend by 0s: %v %v; want the lease given back, no new token", resp, err)
	}
	again := h.fetchOne(5 * time.Second)
	if again.GetMetadata().GetStreamSeq() != m.GetMetadata().GetStreamSeq() || again.GetMetadata().GetNumDelivered() != 2 {
		t.Fatalf("after 0s: got %v; want the same message delivered again", again.GetMetadata())
	}
	ack, err := h.cons.Ack(h.ctx(), &jetgatev1.AckRequest{Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()}})
	if err != nil || len(ack.GetFailures()) != 1 {
		t.Fatalf("ack of the token given back: %v %v; want it refused", ack, err)
	}
}

// A duration past limits.max_lease, or a negative one, is INVALID_ARGUMENT
// saying why, and nothing is sent.
func TestExtendDurationBounds(t *testing.T) {
	h := newHarness(t)
	h.publish(1)
	m := h.fetchOne(time.Second)
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{2 * time.Hour, "limits.max_lease: 1h0m0s"},
		{-time.Second, "0s or more"},
	} {
		_, err := h.cons.Extend(h.ctx(), &jetgatev1.ExtendRequest{
			Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()}, Duration: durationpb.New(tt.d),
		})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), tt.want) {
			t.Fatalf("extend by %v: %v; want INVALID_ARGUMENT naming %q", tt.d, err, tt.want)
		}
	}
	ack, err := h.cons.Ack(h.ctx(), &jetgatev1.AckRequest{Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()}})
	if err != nil || len(ack.GetFailures()) != 0 {
		t.Fatalf("the lease after refused extends: %v %v", ack, err)
	}
}

// An Extend shorter than the time the lease has left cuts it short: the
// answer says so, and the new token settles the lease until then.
func TestExtendShorterThanTheLeaseCutsItAndItsTokenWorks(t *testing.T) {
	h := newHarness(t)
	h.publish(1)
	m := h.fetchOne(time.Second)
	asked := time.Now()
	resp, err := h.cons.Extend(h.ctx(), &jetgatev1.ExtendRequest{
		Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()}, Duration: durationpb.New(5 * time.Second),
	})
	if err != nil || len(resp.GetLeases()) != 1 {
		t.Fatalf("extend by 5s: %v %v", resp, err)
	}
	l := resp.GetLeases()[0]
	if dl := l.GetLeaseDeadline().AsTime(); dl.After(time.Now().Add(5*time.Second)) || dl.Before(asked.Add(4*time.Second)) {
		t.Fatalf("lease deadline %v; want 5s after the Extend", dl)
	}
	ack, err := h.cons.Ack(h.ctx(), &jetgatev1.AckRequest{Stream: stream, Consumer: consumer, Tokens: []string{l.GetNewToken()}})
	if err != nil || len(ack.GetFailures()) != 0 {
		t.Fatalf("ack with the new token: %v %v", ack, err)
	}
}
