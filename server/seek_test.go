package server_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

func (h *harness) seek(c jetgatev1.ConsumerServiceClient, req *jetgatev1.SeekRequest) (*jetgatev1.SeekResponse, error) {
	req.Stream, req.Consumer = stream, consumer
	return c.Seek(h.ctx(), req)
}

func seekSeq(n uint64) *jetgatev1.SeekRequest {
	return &jetgatev1.SeekRequest{Target: &jetgatev1.SeekRequest_Sequence{Sequence: n}}
}

// fetchSeqs fetches until n messages came, and returns them.
func (h *harness) fetchN(c jetgatev1.ConsumerServiceClient, n int) []*jetgatev1.Message {
	h.t.Helper()
	var got []*jetgatev1.Message
	for len(got) < n {
		resp := h.fetch(c, consumer, int32(n-len(got)), 2*time.Second)
		if len(resp.GetMessages()) == 0 {
			h.t.Fatalf("fetched %d of %d messages, then none (empty reason %v)", len(got), n, resp.GetEmptyReason())
		}
		got = append(got, resp.GetMessages()...)
	}
	return got
}

// A seek to a sequence replays from it: every message from there is
// delivered again, once each (counted as redeliveries), and a token from
// before the seek settles nothing.
func TestSeekToASequenceReplaysFromIt(t *testing.T) {
	h := newHarness(t)
	seqs := h.publish(5)
	first := h.fetchN(h.cons, 5)
	wantNoFailures(t, ack(t, h, h.cons, first[0].GetToken(), first[1].GetToken()))

	resp, err := h.seek(h.cons, seekSeq(seqs[2]))
	if err != nil {
		t.Fatalf("seek: %v", err)
	}
	if resp.GetResetSequence() != seqs[2] {
		t.Errorf("reset_sequence %d; want %d", resp.GetResetSequence(), seqs[2])
	}
	if resp.GetState().GetAckFloor().GetStreamSeq() != seqs[1] {
		t.Errorf("state's ack floor %d; want %d (the seek puts it just below its sequence)", resp.GetState().GetAckFloor().GetStreamSeq(), seqs[1])
	}
	again := h.fetchN(h.cons, 3)
	for i, m := range again {
		if m.GetMetadata().GetStreamSeq() != seqs[2+i] {
			t.Errorf("message %d after the seek: seq %d; want %d", i, m.GetMetadata().GetStreamSeq(), seqs[2+i])
		}
	}
	// A token of before settles nothing: the delivery after the seek is
	// still pending once the stale Ack was refused.
	tp := h.tap()
	wantFailure(t, ack(t, h, h.cons, first[2].GetToken()), 0, "LEASE_EXPIRED")
	tp.none(t, "the stale Ack")
	if ci := h.info(consumer); ci.NumAckPending != 3 {
		t.Errorf("ack pending after the stale Ack: %d; want 3", ci.NumAckPending)
	}
	tokens := make([]string, len(again))
	for i, m := range again {
		tokens[i] = m.GetToken()
	}
	wantNoFailures(t, ack(t, h, h.cons, tokens...))

	// Just past the last message: only what is stored from now on, the
	// furthest a seek to a sequence may go.
	if _, err := h.seek(h.cons, seekSeq(seqs[4]+1)); err != nil {
		t.Fatalf("seek just past the last message: %v", err)
	}
	next := h.publish(1)
	if m := h.fetchOne(5 * time.Second); m.GetMetadata().GetStreamSeq() != next[0] {
		t.Errorf("after a seek just past the last message: seq %d; want the next one stored, %d", m.GetMetadata().GetStreamSeq(), next[0])
	}
}

// A seek to a time delivers every message stored at or after it; a time
// after the last message delivers only what comes next.
func TestSeekToATime(t *testing.T) {
	h := newHarness(t)
	h.publish(3)
	mid := time.Now()
	later := h.publish(2)
	msgs := h.fetchN(h.cons, 5)
	tokens := make([]string, len(msgs))
	for i, m := range msgs {
		tokens[i] = m.GetToken()
	}
	wantNoFailures(t, ack(t, h, h.cons, tokens...))

	resp, err := h.seek(h.cons, &jetgatev1.SeekRequest{Target: &jetgatev1.SeekRequest_Time{Time: timestamppb.New(mid)}})
	if err != nil {
		t.Fatalf("seek: %v", err)
	}
	if resp.GetResetSequence() != later[0] {
		t.Fatalf("reset_sequence %d; want %d, the first message stored after the time", resp.GetResetSequence(), later[0])
	}
	again := h.fetchN(h.cons, 2)
	for i, m := range again {
		if m.GetMetadata().GetStreamSeq() != later[i] {
			t.Errorf("message %d: seq %d; want %d", i, m.GetMetadata().GetStreamSeq(), later[i])
		}
	}
	wantNoFailures(t, ack(t, h, h.cons, again[0].GetToken(), again[1].GetToken()))

	// Past the last message: nothing until the next one.
	resp, err = h.seek(h.cons, &jetgatev1.SeekRequest{Target: &jetgatev1.SeekRequest_Time{Time: timestamppb.New(time.Now())}})
	if err != nil {
		t.Fatalf("seek to now: %v", err)
	}
	if resp.GetResetSequence() != later[1]+1 {
		t.Errorf("reset_sequence %d; want %d, the next message's", resp.GetResetSequence(), later[1]+1)
	}
	if got := h.fetch(h.cons, consumer, 5, 200*time.Millisecond).GetMessages(); len(got) != 0 {
		t.Errorf("fetched %d messages after a seek past the last; want none", len(got))
	}
	next := h.publish(1)
	if m := h.fetchOne(2 * time.Second); m.GetMetadata().GetStreamSeq() != next[0] {
		t.Errorf("after publishing: seq %d; want %d", m.GetMetadata().GetStreamSeq(), next[0])
	}
}

// A seek to the ack floor delivers everything not acknowledged again, now,
// rather than after ack_wait.
func TestSeekToTheAckFloorRedeliversTheUnacknowledgedNow(t *testing.T) {
	h := newHarness(t) // ack_wait 30s: a redelivery within the test is the seek's
	seqs := h.publish(3)
	msgs := h.fetchN(h.cons, 3)
	wantNoFailures(t, ack(t, h, h.cons, msgs[0].GetToken()))
	resp, err := h.seek(h.cons, &jetgatev1.SeekRequest{Target: &jetgatev1.SeekRequest_AckFloor{AckFloor: true}})
	if err != nil {
		t.Fatalf("seek: %v", err)
	}
	if resp.GetResetSequence() != seqs[1] {
		t.Errorf("reset_sequence %d; want %d", resp.GetResetSequence(), seqs[1])
	}
	again := h.fetchN(h.cons, 2)
	if again[0].GetMetadata().GetStreamSeq() != seqs[1] || again[1].GetMetadata().GetStreamSeq() != seqs[2] {
		t.Errorf("after the seek: seqs %d, %d; want %d, %d", again[0].GetMetadata().GetStreamSeq(), again[1].GetMetadata().GetStreamSeq(), seqs[1], seqs[2])
	}
}

// Every replica voids its leases of the consumer: a token issued by
// another replica before the seek is refused there.
func TestSeekVoidsTheLeasesOfEveryReplica(t *testing.T) {
	h := newHarness(t, withKeys(token.RandomKeyring()))
	_, b, _ := h.startGateway()
	seqs := h.publish(2)
	onB := h.fetchN(b, 2)
	if _, err := h.seek(h.cons, seekSeq(seqs[0])); err != nil {
		t.Fatalf("seek through the other replica: %v", err)
	}
	again := h.fetchN(h.cons, 2)
	tp := h.tap()
	wantFailure(t, ack(t, h, b, onB[0].GetToken()), 0, "LEASE_EXPIRED")
	wantFailure(t, ack(t, h, h.cons, onB[1].GetToken()), 0, "LEASE_EXPIRED")
	tp.none(t, "the stale Acks")
	wantNoFailures(t, ack(t, h, h.cons, again[0].GetToken(), again[1].GetToken()))
}

// Each wrong Seek is refused with its own reason, and changes nothing.
func TestSeekRefusals(t *testing.T) {
	h := newHarness(t)
	h.publish(1)
	cases := []struct {
		name   string
		req    *jetgatev1.SeekRequest
		code   codes.Code
		reason string
	}{
		{"no target", &jetgatev1.SeekRequest{}, codes.InvalidArgument, "INVALID_ARGUMENT"},
		{"sequence 0", seekSeq(0), codes.InvalidArgument, "INVALID_ARGUMENT"},
		{"ack_floor false", &jetgatev1.SeekRequest{Target: &jetgatev1.SeekRequest_AckFloor{}}, codes.InvalidArgument, "INVALID_ARGUMENT"},
		{"a time to come", &jetgatev1.SeekRequest{Target: &jetgatev1.SeekRequest_Time{Time: timestamppb.New(time.Now().Add(time.Hour))}}, codes.InvalidArgument, "SEEK_TIME_IN_FUTURE"},
		// The server would take it, and the consumer wait, silent, that far on.
		{"a sequence past the end", seekSeq(1_000_000), codes.InvalidArgument, "INVALID_ARGUMENT"},
	}
	for _, tc := range cases {
		_, err := h.seek(h.cons, tc.req)
		wantCode(t, err, tc.code, tc.reason)
	}
	_, err := h.cons.Seek(h.ctx(), &jetgatev1.SeekRequest{Stream: stream, Consumer: "nobody", Target: &jetgatev1.SeekRequest_AckFloor{AckFloor: true}})
	wantCode(t, err, codes.NotFound, "CONSUMER_NOT_FOUND")
	if m := h.fetchOne(time.Second); m.GetMetadata().GetNumDelivered() != 1 {
		t.Errorf("after the refused seeks: delivered %d; want 1", m.GetMetadata().GetNumDelivered())
	}
}

// A deliver policy without a start to move refuses a sequence, and one
// that starts at a sequence refuses to go below it; both allow the ack
// floor.
func TestSeekFollowsTheDeliverPolicy(t *testing.T) {
	h := newHarness(t)
	seqs := h.publish(3)
	mk := func(name string, cfg jetstream.ConsumerConfig) {
		cfg.Durable, cfg.AckPolicy = name, jetstream.AckExplicitPolicy
		if _, err := h.js.CreateOrUpdateConsumer(h.ctx(), stream, cfg); err != nil {
			t.Fatal(err)
		}
	}
	mk("from-new", jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverNewPolicy})
	mk("from-two", jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: seqs[1]})
	g := gwtest.Start(t, replica.Options{
		Conn:     natstest.Connect(t, h.ns),
		Keys:     h.cfg.keys,
		OnDemand: coreconsumer.OnDemand{Match: []coreconsumer.Match{{Stream: stream, Consumer: "from-*"}}},
	})
	seek := func(name string, req *jetgatev1.SeekRequest) error {
		req.Stream, req.Consumer = stream, name
		_, err := g.Consumers.Seek(h.ctx(), req)
		return err
	}
	floor := func() *jetgatev1.SeekRequest {
		return &jetgatev1.SeekRequest{Target: &jetgatev1.SeekRequest_AckFloor{AckFloor: true}}
	}
	wantCode(t, seek("from-new", seekSeq(1)), codes.FailedPrecondition, "SEEK_NOT_ALLOWED")
	wantCode(t, seek("from-new", &jetgatev1.SeekRequest{Target: &jetgatev1.SeekRequest_Time{Time: timestamppb.New(time.Now().Add(-time.Minute))}}), codes.FailedPrecondition, "SEEK_NOT_ALLOWED")
	if err := seek("from-new", floor()); err != nil {
		t.Errorf("seek of a deliver-new consumer to its ack floor: %v", err)
	}
	wantCode(t, seek("from-two", seekSeq(seqs[0])), codes.InvalidArgument, "SEEK_BELOW_START")
	if err := seek("from-two", seekSeq(seqs[2])); err != nil {
		t.Errorf("seek above opt_start_seq: %v", err)
	}
	if err := seek("from-two", floor()); err != nil {
		t.Errorf("seek of a by-start-sequence consumer to its ack floor: %v", err)
	}
}
