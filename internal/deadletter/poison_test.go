package deadletter

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/natstest"
)

// An advisory that cannot be copied as it is would be retried for ever, and
// the worker's pending advisories would hold back every other consumer's:
// each of these is stored with the dead letter's headers alone, once.

// captured runs a worker for a moment, so that the advisory stream captures
// billing's advisories while none works them off.
func (e *env) captured() {
	e.t.Helper()
	e.start(true)()
}

// wantHeadersAlone checks that the one dead letter is seq's, without data
// or an original subject to put it back on.
func (e *env) wantHeadersAlone(seq uint64) {
	e.t.Helper()
	dls := e.deadLetters()
	if len(dls) != 1 {
		e.t.Fatalf("%d dead letters; want 1", len(dls))
	}
	h := dls[0].Header
	if len(dls[0].Data) != 0 || h.Get(HeaderSubject) != "" || h.Get(HeaderSeq) != strconv.FormatUint(seq, 10) || h.Get(HeaderReason) != ReasonTerminated {
		e.t.Errorf("dead letter %v with %d bytes; want seq %d's headers alone", h, len(dls[0].Data), seq)
	}
}

// remadeWithAnotherAt deletes ORDERS and makes it again, with a message
// that never failed at seq.
func (e *env) remadeWithAnotherAt(seq uint64) {
	e.t.Helper()
	e.deleteStream("ORDERS")
	natstest.Stream(e.t, e.nc, "ORDERS", "orders.>")
	if again := e.publish("alive, never failed"); again != seq {
		e.t.Fatalf("the new stream stored its first message at %d; want %d", again, seq)
	}
}

func (e *env) deleteStream(name string) {
	e.t.Helper()
	if err := e.js.DeleteStream(context.Background(), name); err != nil {
		e.t.Fatal(err)
	}
}

// termCaptured is term, and waits until the advisory stream holds the
// Term's advisory: the server queues it on the consumer's own send queue,
// which a stream deleted at once drops with its consumers.
func (e *env) termCaptured() uint64 {
	e.t.Helper()
	seq := e.term()
	natstest.Eventually(e.t, within, "the Term's advisory captured", func() bool { return e.streamState(AdvisoryStream).LastSeq >= 1 })
	return seq
}

func TestADeadLetterOfADeletedStreamHasItsHeadersAlone(t *testing.T) {
	e := newEnv(t)
	e.captured()
	e.publish("one")
	seq := e.termCaptured()
	e.deleteStream("ORDERS")
	e.start(true)
	e.workedOff(1)
	e.wantHeadersAlone(seq)
}

// A stream deleted and made again while no worker ran has another message
// at the sequence: the dead letter must not carry it.
func TestADeadLetterOfAStreamMadeAgainHasNotItsNewMessage(t *testing.T) {
	e := newEnv(t)
	e.captured()
	e.publish("failed")
	seq := e.termCaptured()
	e.remadeWithAnotherAt(seq)
	e.start(true)
	e.workedOff(1)
	e.wantHeadersAlone(seq)
}

// A message that fits max_payload, but not with the dead letter's headers,
// is dead-lettered without its data.
func TestADeadLetterOverMaxPayloadHasItsHeadersAlone(t *testing.T) {
	e := newEnv(t)
	e.start(true)
	big := strings.Repeat("x", int(e.nc.MaxPayload())-64)
	if _, err := e.js.Publish(context.Background(), "orders.1", []byte(big)); err != nil {
		t.Fatal(err)
	}
	seq := e.term()
	e.workedOff(1)
	e.wantHeadersAlone(seq)
}

// A dead letter's Jetgate-Dead-* headers are the worker's: ones the
// original message carried (its publisher's, whatever their case) are
// dropped.
func TestADeadLetterCarriesNoneOfTheOriginalsDeadHeaders(t *testing.T) {
	e := newEnv(t)
	e.start(true)
	m := &nats.Msg{Subject: "orders.1", Data: []byte("x"), Header: nats.Header{}}
	m.Header.Set(HeaderTermReason, "forged")
	m.Header["jetgate-dead-reason"] = []string{"forged"}
	m.Header.Set("X-Kept", "yes")
	if _, err := e.js.PublishMsg(context.Background(), m, jetstream.WithExpectStream("ORDERS")); err != nil {
		t.Fatal(err)
	}
	e.runOut()
	e.workedOff(1)
	dls := e.deadLetters()
	if len(dls) != 1 {
		t.Fatalf("%d dead letters; want 1", len(dls))
	}
	h := dls[0].Header
	var reasons []string
	for k, vs := range h {
		if strings.EqualFold(k, HeaderReason) {
			reasons = append(reasons, vs...)
		}
	}
	if h.Get(HeaderTermReason) != "" || len(reasons) != 1 || reasons[0] != ReasonMaxDeliver || h.Get("X-Kept") != "yes" {
		t.Errorf("dead letter headers %v; want the worker's reason alone, no Term reason, X-Kept", h)
	}
}

// The same for a Term's record, which says no time of its own: the stream
// made again after the record was captured.
func TestADeadLetterOfARecordWhoseStreamWasMadeAgainHasNotItsNewMessage(t *testing.T) {
	e := newEnv(t)
	e.captured()
	seq := e.publish("failed")
	if err := RecordTerms(context.Background(), e.js, "", "ORDERS", "billing", "malformed", []Termed{{StreamSeq: seq, Deliveries: 1}}); err != nil {
		t.Fatal(err)
	}
	e.remadeWithAnotherAt(seq)
	e.start(true)
	e.workedOff(1)
	e.wantHeadersAlone(seq)
}

// The same where the dead-letter stream's max_msg_size, not NATS's
// max_payload, is what the letter is over: the stream refuses it for ever.
func TestADeadLetterOverItsStreamsMaxMsgSizeHasItsHeadersAlone(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if _, err := e.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}, MaxMsgSize: 2048}); err != nil {
		t.Fatal(err)
	}
	e.start(true)
	if _, err := e.js.Publish(ctx, "orders.1", []byte(strings.Repeat("x", 4096))); err != nil {
		t.Fatal(err)
	}
	seq := e.term()
	e.workedOff(1)
	e.wantHeadersAlone(seq)
}
