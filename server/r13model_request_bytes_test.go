package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// A message larger than the consumer's max_request_max_bytes (an
// operator's limit on every pull) reaches no caller until the limit is
// raised, as one larger than the gateway's bound: Fetch and Consume say
// so, naming the limit. Before, a Fetch that set no max_bytes was answered
// empty EMPTY_REASON_MAX_BYTES ("the next message is larger than
// max_bytes", its own, which it had not set) at every try, and a Consume
// stream ended "larger than the stream's max_bytes (0); open the stream
// with a larger max_bytes", which no stream could do.
func TestAMessageOverTheConsumersMaxRequestMaxBytesIsNamed(t *testing.T) {
	o := newOperated(t, jetstream.ConsumerConfig{Durable: "small", MaxRequestMaxBytes: 200}, 1)
	c := o.replicas[0]
	if _, err := o.js.Publish(o.ctx(), "orders.big", make([]byte, 600)); err != nil {
		t.Fatal(err)
	}
	wantNamed := func(what string, err error) {
		t.Helper()
		code, reason := codeAndReason(err)
		if code != codes.FailedPrecondition || reason != "MESSAGE_TOO_LARGE" || !strings.Contains(err.Error(), "max_request_max_bytes") {
			t.Errorf("%s: %v %v %v; want FAILED_PRECONDITION MESSAGE_TOO_LARGE naming max_request_max_bytes", what, code, reason, err)
		}
	}
	r, err := o.fetch(t, c, &jetgatev1.FetchRequest{Batch: 1, Expires: durationpb.New(time.Second)})
	if err == nil {
		t.Errorf("a Fetch without max_bytes: %d messages, %v; want MESSAGE_TOO_LARGE", len(r.GetMessages()), r.GetEmptyReason())
	} else {
		wantNamed("a Fetch without max_bytes", err)
	}
	// The caller's own max_bytes, below the consumer's: its own to raise.
	r, err = o.fetch(t, c, &jetgatev1.FetchRequest{Batch: 1, MaxBytes: proto.Int64(100), Expires: durationpb.New(time.Second)})
	if err != nil || r.GetEmptyReason() != jetgatev1.EmptyReason_EMPTY_REASON_MAX_BYTES {
		t.Errorf("a Fetch of max_bytes 100: %v %v; want empty, MAX_BYTES", r.GetEmptyReason(), err)
	}
	st, err := c.Consume(o.ctx(), &jetgatev1.ConsumeRequest{Stream: stream, Consumer: o.name, MaxMessages: 1, Heartbeat: durationpb.New(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	for {
		r, err := st.Recv()
		if err != nil {
			wantNamed("a Consume stream", err)
			break
		}
		if len(r.GetMessages()) > 0 {
			t.Fatalf("a Consume stream received %d messages", len(r.GetMessages()))
		}
	}
	if ci := o.info(o.name); ci.Delivered.Consumer != 0 {
		t.Errorf("%d deliveries; want none", ci.Delivered.Consumer)
	}
}
