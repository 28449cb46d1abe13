package server_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
)

// A consumer's config read, changed and sent back whole (AIP-134's
// read-modify-write) is taken, the server's and jetgate's keys of its
// metadata with it; changing or adding one of those is refused, and the
// creator stays.
func TestAnUpdateTakesTheMetadataAsRead(t *testing.T) {
	h := newHarness(t)
	a := h.adminGateways(1, coreconsumer.Admin{MaxAckWait: time.Minute})[0]
	made, err := create(h, a, &jetgatev1.ConsumerConfig{DurableName: "team-md", Metadata: map[string]string{"owner": "billing"}})
	if err != nil {
		t.Fatal(err)
	}
	md := made.GetConfig().GetMetadata()
	if md[coreconsumer.CreatedBy] == "" || len(md) < 3 {
		t.Fatalf("created metadata %v: want the creator and the server's keys beside owner", md)
	}
	update := func(md map[string]string) (*jetgatev1.UpdateConsumerResponse, error) {
		return a.UpdateConsumer(h.ctx(), &jetgatev1.UpdateConsumerRequest{Stream: stream, Consumer: "team-md",
			Config: &jetgatev1.ConsumerConfig{Metadata: md}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"metadata"}}})
	}
	changed := map[string]string{"owner": "ledger"}
	for k, v := range md {
		if k != "owner" {
			changed[k] = v
		}
	}
	up, err := update(changed)
	if err != nil {
		t.Fatalf("the metadata sent back as read, one key changed: %v", err)
	}
	if got := up.GetConfig().GetMetadata(); got["owner"] != "ledger" || got[coreconsumer.CreatedBy] != md[coreconsumer.CreatedBy] {
		t.Errorf("updated metadata %v", got)
	}
	// Left out, jetgate's keys stay.
	up, err = update(map[string]string{"owner": "audit"})
	if err != nil {
		t.Fatalf("the metadata without jetgate's keys: %v", err)
	}
	if got := up.GetConfig().GetMetadata(); got["owner"] != "audit" || got[coreconsumer.CreatedBy] != md[coreconsumer.CreatedBy] {
		t.Errorf("updated metadata %v: want jetgate's keys kept", got)
	}
	for _, bad := range []map[string]string{
		{coreconsumer.CreatedBy: "someone-else"},
		{"jetgate.new": "x"},
		{"_nats.level": "99"},
	} {
		_, err := update(bad)
		wantCode(t, err, codes.InvalidArgument, "INVALID_ARGUMENT")
	}
}

// A create, update or delete on a stream that does not exist says so,
// as Publish does, rather than that a consumer was not found.
func TestConsumersOfAStreamThatDoesNotExist(t *testing.T) {
	h := newHarness(t)
	a := gwtest.Start(t, replica.Options{
		Conn:  natstest.Connect(t, h.ns),
		Keys:  h.cfg.keys,
		Admin: &coreconsumer.Admin{Streams: []string{"*"}, Consumers: []string{"team-*"}},
	}).Consumers
	_, err := a.CreateConsumer(h.ctx(), &jetgatev1.CreateConsumerRequest{Stream: "NOPE", Config: &jetgatev1.ConsumerConfig{DurableName: "team-a"}})
	wantCode(t, err, codes.NotFound, "STREAM_NOT_FOUND")
	_, err = a.DeleteConsumer(h.ctx(), &jetgatev1.DeleteConsumerRequest{Stream: "NOPE", Consumer: "team-a"})
	wantCode(t, err, codes.NotFound, "STREAM_NOT_FOUND")
	// A Fetch names a consumer: there is none.
	_, err = a.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: "NOPE", Consumer: "team-a"})
	wantCode(t, err, codes.NotFound, "CONSUMER_NOT_FOUND")
}

// 0001-01-01T00:00:00Z, the zero time, is a valid timestamp: a Seek to it
// replays from the first message, as one to any time before it does. The
// server reads a time in nanoseconds: one before 1678 overflowed into one
// after 2262, and the consumer skipped every message.
func TestSeekToAnEarlyTimeReplaysFromTheFirst(t *testing.T) {
	h := newHarness(t)
	seqs := h.publish(2)
	for _, at := range []time.Time{{}, time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1677, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)} {
		wantNoFailures(t, ack(t, h, h.cons, h.fetchOne(time.Second).GetToken()))
		resp, err := h.seek(h.cons, &jetgatev1.SeekRequest{Target: &jetgatev1.SeekRequest_Time{Time: timestamppb.New(at)}})
		if err != nil {
			t.Fatalf("seek to %v: %v", at, err)
		}
		if resp.GetResetSequence() != seqs[0] {
			t.Errorf("seek to %v: reset_sequence %d; want %d, the first message", at, resp.GetResetSequence(), seqs[0])
		}
	}
}
