package deadletter

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/natstest"
)

const (
	within     = 15 * time.Second
	dlqSubject = "dlq.billing"
)

// env is a NATS server with ORDERS, a dead-letter stream DLQ and the
// consumer ORDERS/billing (max_deliver 1), pulled by the test itself.
type env struct {
	t    *testing.T
	nc   *nats.Conn
	js   jetstream.JetStream
	cons jetstream.Consumer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	natstest.Stream(t, nc, "DLQ", "dlq.>")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := js.CreateOrUpdateConsumer(context.Background(), "ORDERS", jetstream.ConsumerConfig{
		Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 1, AckWait: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, nc: nc, js: js, cons: cons}
}

// start runs a worker for billing's dead letter until the end of the test
// (or until the returned stop).
func (e *env) start(onTerm bool) (stop func()) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	w, err := Start(ctx, Options{JS: e.js, Routes: []Route{{Stream: "ORDERS", Consumer: "billing", Subject: dlqSubject, OnTerm: onTerm}},
		Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		e.t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			w.Stop(context.Background())
		}
	}
	e.t.Cleanup(stop)
	return stop
}

func (e *env) publish(data string) uint64 {
	e.t.Helper()
	ack, err := e.js.Publish(context.Background(), "orders.1", []byte(data))
	if err != nil {
		e.t.Fatal(err)
	}
	return ack.Sequence
}

// next pulls the next message of billing.
func (e *env) next() jetstream.Msg {
	e.t.Helper()
	b, err := e.cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		e.t.Fatal(err)
	}
	var got jetstream.Msg
	for m := range b.Messages() {
		got = m
	}
	if got == nil {
		e.t.Fatalf("no message for billing: %v", b.Error())
	}
	return got
}

// term terminates the next message of billing, with a reason.
func (e *env) term() uint64 {
	e.t.Helper()
	m := e.next()
	md, _ := m.Metadata()
	if err := m.TermWithReason("malformed"); err != nil {
		e.t.Fatal(err)
	}
	return md.Sequence.Stream
}

// runOut naks the next message of billing (max_deliver 1) and lets a pull
// wait, so that the server notices it is out of deliveries.
func (e *env) runOut() uint64 {
	e.t.Helper()
	m := e.next()
	md, _ := m.Metadata()
	if err := m.Nak(); err != nil {
		e.t.Fatal(err)
	}
	b, err := e.cons.Fetch(1, jetstream.FetchMaxWait(time.Second))
	if err != nil {
		e.t.Fatal(err)
	}
	for range b.Messages() {
		e.t.Fatal("a delivery past max_deliver 1")
	}
	return md.Sequence.Stream
}

func (e *env) streamState(name string) jetstream.StreamState {
	e.t.Helper()
	s, err := e.js.Stream(context.Background(), name)
	if err != nil {
		e.t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return info.State
}

// termAdvisories receives the MSG_TERMINATED advisories of billing from
// now on.
func (e *env) termAdvisories() <-chan *nats.Msg {
	e.t.Helper()
	advisories := make(chan *nats.Msg, 4)
	sub, err := e.nc.ChanSubscribe(advisoryTermed+"ORDERS.billing", advisories)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := e.nc.Flush(); err != nil {
		e.t.Fatal(err)
	}
	return advisories
}

// deadLetters reads every dead letter of billing.
func (e *env) deadLetters() []*jetstream.RawStreamMsg {
	e.t.Helper()
	return natstest.StreamMsgs(e.t, e.js, "DLQ", dlqSubject)
}

// workedOff waits until the worker has taken (acked) the n advisories
// captured so far: the advisory stream is a work queue.
func (e *env) workedOff(n uint64) {
	e.t.Helper()
	natstest.Eventually(e.t, within, strconv.FormatUint(n, 10)+" advisories captured and worked off", func() bool {
		st := e.streamState(AdvisoryStream)
		return st.LastSeq >= n && st.Msgs == 0
	})
}

// A dead letter carries a Nats-Msg-Id of its own message and event, so that
// a copy made again (the advisory redelivered after the worker's Ack was
// lost, or two workers racing) is not stored twice.
func TestDeadLetterCarriesItsMsgID(t *testing.T) {
	e := newEnv(t)
	stop := e.start(true)
	advisories := e.termAdvisories()
	e.publish("first")
	seq := e.term()
	e.workedOff(1)
	dls := e.deadLetters()
	if len(dls) != 1 {
		t.Fatalf("%d dead letters after a Term, want 1", len(dls))
	}
	id := dls[0].Header.Get(jetstream.MsgIDHeader)
	if id == "" {
		t.Fatalf("the dead letter of seq %d has no %s (headers %v)", seq, jetstream.MsgIDHeader, dls[0].Header)
	}

	// The same advisory again, to a worker that has not copied it (another
	// replica's): it copies it again, and the copy is not stored.
	stop()
	e.start(true)
	var adv *nats.Msg
	select {
	case adv = <-advisories:
	case <-time.After(within):
		t.Fatal("no MSG_TERMINATED advisory seen")
	}
	if _, err := e.js.Publish(context.Background(), adv.Subject, adv.Data); err != nil {
		t.Fatal(err)
	}
	e.workedOff(2)
	if dls := e.deadLetters(); len(dls) != 1 {
		t.Fatalf("%d dead letters after the same advisory was worked off twice, want 1", len(dls))
	}

	// Another message's dead letter is another id.
	e.publish("second")
	e.term()
	e.workedOff(3)
	dls = e.deadLetters()
	if len(dls) != 2 {
		t.Fatalf("%d dead letters after a second Term, want 2", len(dls))
	}
	if other := dls[1].Header.Get(jetstream.MsgIDHeader); other == "" || other == id {
		t.Fatalf("the second dead letter's %s is %q; the first's is %q", jetstream.MsgIDHeader, other, id)
	}
}

// With on_term unset, a terminated message is not dead-lettered: its
// advisory is not even captured, and where it still is (the advisory stream
// kept the subject from a time on_term was set) the worker drops it. A
// message out of deliveries still is.
func TestTermIsNotDeadLetteredWithoutOnTerm(t *testing.T) {
	t.Run("fresh", func(t *testing.T) {
		e := newEnv(t)
		e.start(false)
		e.publish("terminated")
		e.term()
		// The advisories of one consumer come in order: once the later one
		// is copied, the Term's was captured, or never will be.
		e.publish("out of deliveries")
		marker := e.runOut()
		e.workedOff(1)
		dls := e.deadLetters()
		if len(dls) != 1 || dls[0].Header.Get(HeaderReason) != ReasonMaxDeliver || dls[0].Header.Get(HeaderSeq) != strconv.FormatUint(marker, 10) {
			t.Fatalf("dead letters %v; want only the one of seq %d, out of deliveries", headersOf(dls), marker)
		}
		if st := e.streamState(AdvisoryStream); st.LastSeq != 1 {
			t.Fatalf("%d advisories captured; want 1: the Term's was captured though on_term is unset", st.LastSeq)
		}
	})
	t.Run("subject kept from before", func(t *testing.T) {
		e := newEnv(t)
		stop := e.start(true)
		stop()
		e.start(false)
		if st := e.streamState(AdvisoryStream); st.Msgs != 0 {
			t.Fatalf("%d advisories before the test", st.Msgs)
		}
		e.publish("terminated")
		e.term()
		e.workedOff(1)
		if dls := e.deadLetters(); len(dls) != 0 {
			t.Fatalf("dead letters %v with on_term unset; want none", headersOf(dls))
		}
	})
}

func headersOf(ms []*jetstream.RawStreamMsg) []nats.Header {
	var hs []nats.Header
	for _, m := range ms {
		hs = append(hs, m.Header)
	}
	return hs
}
