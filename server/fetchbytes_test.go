package server_test

import (
	"bytes"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// Six messages of 900 KB do not fit one 4 MiB response: a Fetch of all six
// returns what fits, and the rest go to the next Fetches; nothing is left to
// come back after ack_wait.
func TestFetchReturnsWhatFitsAndKeepsTheRest(t *testing.T) {
	h := newHarness(t)
	data := bytes.Repeat([]byte("x"), 900_000)
	for range 6 {
		if _, err := h.js.Publish(h.ctx(), "orders.big", data); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	for fetches := 0; got < 6; fetches++ {
		if fetches == 6 {
			t.Fatalf("%d of 6 messages after %d fetches", got, fetches)
		}
		resp, err := h.cons.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: 6, Expires: durationpb.New(time.Second)})
		if err != nil {
			t.Fatalf("fetch %d: %v (a response over a client's 4 MiB strands its batch)", fetches, err)
		}
		var toks []string
		for _, m := range resp.GetMessages() {
			if !bytes.Equal(m.GetData(), data) || m.GetMetadata().GetNumDelivered() != 1 {
				t.Fatalf("message %d: %d bytes, delivered %d", m.GetMetadata().GetStreamSeq(), len(m.GetData()), m.GetMetadata().GetNumDelivered())
			}
			toks = append(toks, m.GetToken())
		}
		if len(toks) == 0 || len(toks) == 6 {
			t.Fatalf("fetch %d returned %d messages; want some, and never all six at once", fetches, len(toks))
		}
		wantNoFailures(t, ack(t, h, h.cons, toks...))
		got += len(toks)
	}
	natstest.Eventually(t, 5*time.Second, "all acked", func() bool {
		ci := h.info(consumer)
		return ci.NumAckPending == 0 && ci.NumPending == 0 && ci.NumRedelivered == 0
	})
}

// One message larger than a Fetch may return is refused with an error that
// names the limit; it is not delivered (and so not burnt by redeliveries),
// and the caller's own, smaller max_bytes still says MAX_BYTES.
func TestMessageLargerThanTheFetchLimitNamesTheLimit(t *testing.T) {
	h := newHarness(t, maxFetchBytes(64<<10))
	if _, err := h.js.Publish(h.ctx(), "orders.big", bytes.Repeat([]byte("y"), 100_000)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, err := h.cons.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: 1, Expires: durationpb.New(time.Second)})
		wantCode(t, err, codes.FailedPrecondition, "MESSAGE_TOO_LARGE")
		if msg := statusMessage(err); !bytes.Contains([]byte(msg), []byte("65536")) {
			t.Fatalf("message %q does not name the limit", msg)
		}
	}
	resp, err := h.cons.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: 1, MaxBytes: ptr(int64(1000)), Expires: durationpb.New(time.Second)})
	if err != nil || resp.GetEmptyReason() != jetgatev1.EmptyReason_EMPTY_REASON_MAX_BYTES {
		t.Fatalf("fetch with the caller's max_bytes: %v, %v; want empty with MAX_BYTES", resp, err)
	}
	if ci := h.info(consumer); ci.NumAckPending != 0 || ci.NumRedelivered != 0 || ci.NumPending != 1 {
		t.Fatalf("consumer state %+v: the message was delivered", ci)
	}
}

func ptr[T any](v T) *T { return &v }

func statusMessage(err error) string {
	st, _ := status.FromError(err)
	return st.Message()
}
