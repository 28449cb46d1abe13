package server_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/deadletter"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

const dlqSubject = "dlq.billing"

// dlEnv is a NATS server with ORDERS and a dead-letter stream DLQ, and the
// consumer billing with max_deliver 3 and a dead letter (on_term too).
type dlEnv struct {
	t    *testing.T
	ns   *natsserver.Server
	nc   *nats.Conn
	js   jetstream.JetStream
	keys *token.Keyring
}

func newDLEnv(t *testing.T) *dlEnv {
	t.Helper()
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, stream, "orders.>")
	natstest.Stream(t, nc, "DLQ", "dlq.>")
	js, _ := jetstream.New(nc)
	return &dlEnv{t: t, ns: ns, nc: nc, js: js, keys: token.RandomKeyring()}
}

func (e *dlEnv) gateway() *gwtest.Replica {
	e.t.Helper()
	return gwtest.Start(e.t, replica.Options{
		Conn: natstest.Connect(e.t, e.ns),
		Consumers: []coreconsumer.Config{
			{Stream: stream, Name: consumer, MaxDeliver: 3, DeadLetter: &coreconsumer.DeadLetter{Subject: dlqSubject, OnTerm: true}},
			{Stream: stream, Name: other},
		},
		Keys: e.keys,
	})
}

func (e *dlEnv) publish(subject, data string, h nats.Header) uint64 {
	e.t.Helper()
	ack, err := e.js.PublishMsg(context.Background(), &nats.Msg{Subject: subject, Data: []byte(data), Header: h})
	if err != nil {
		e.t.Fatal(err)
	}
	return ack.Sequence
}

// deadLetters reads every message on the dead-letter subject.
func (e *dlEnv) deadLetters() []*jetstream.RawStreamMsg {
	e.t.Helper()
	return natstest.StreamMsgs(e.t, e.js, "DLQ", dlqSubject)
}

func (e *dlEnv) waitDeadLetters(n int) []*jetstream.RawStreamMsg {
	e.t.Helper()
	var dls []*jetstream.RawStreamMsg
	natstest.Eventually(e.t, 15*time.Second, strconv.Itoa(n)+" dead letters", func() bool {
		dls = e.deadLetters()
		return len(dls) >= n
	})
	if len(dls) != n {
		e.t.Fatalf("%d dead letters, want %d", len(dls), n)
	}
	return dls
}

func fetchVia(t *testing.T, c jetgatev1.ConsumerServiceClient, batch int32, expires time.Duration) []*jetgatev1.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), expires+10*time.Second)
	defer cancel()
	resp, err := c.Fetch(ctx, &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: batch, Expires: durationpb.New(expires)})
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	return resp.GetMessages()
}

// runOut naks the next message until the server gives up on it, then lets
// a pull wait so that the server notices (and sends its advisory).
func runOut(t *testing.T, c jetgatev1.ConsumerServiceClient) {
	t.Helper()
	for d := uint64(1); d <= 3; d++ {
		ms := fetchVia(t, c, 1, 5*time.Second)
		if len(ms) != 1 || ms[0].GetMetadata().GetNumDelivered() != d {
			t.Fatalf("delivery %d: %v", d, ms)
		}
		resp, err := c.Nak(context.Background(), &jetgatev1.NakRequest{Stream: stream, Consumer: consumer, Tokens: []string{ms[0].GetToken()}})
		if err != nil || len(resp.GetFailures()) != 0 {
			t.Fatalf("nak: %v %v", resp, err)
		}
	}
	if ms := fetchVia(t, c, 1, time.Second); len(ms) != 0 {
		t.Fatalf("a fourth delivery past max_deliver 3: %v", ms)
	}
}

func wantHeader(t *testing.T, m *jetstream.RawStreamMsg, k, v string) {
	t.Helper()
	if got := m.Header.Get(k); got != v {
		t.Errorf("dead letter header %s = %q, want %q (headers %v)", k, got, v, m.Header)
	}
}

func TestMessageOutOfDeliveriesIsDeadLettered(t *testing.T) {
	e := newDLEnv(t)
	g := e.gateway()
	seq := e.publish("orders.eu", "payload", nats.Header{"X-Trace": {"a", "b"}})
	runOut(t, g.Consumers)
	dl := e.waitDeadLetters(1)[0]
	if string(dl.Data) != "payload" || len(dl.Header.Values("X-Trace")) != 2 {
		t.Errorf("dead letter data %q headers %v; want the original's", dl.Data, dl.Header)
	}
	wantHeader(t, dl, deadletter.HeaderStream, stream)
	wantHeader(t, dl, deadletter.HeaderConsumer, consumer)
	wantHeader(t, dl, deadletter.HeaderSeq, strconv.FormatUint(seq, 10))
	wantHeader(t, dl, deadletter.HeaderSubject, "orders.eu")
	wantHeader(t, dl, deadletter.HeaderDeliveries, "3")
	wantHeader(t, dl, deadletter.HeaderReason, "MAX_DELIVERIES")
	wantHeader(t, dl, deadletter.HeaderTermReason, "")
	s, _ := e.js.Stream(context.Background(), stream)
	if orig, err := s.GetMsg(context.Background(), seq); err != nil || string(orig.Data) != "payload" {
		t.Fatalf("the original is no longer in its stream: %v", err)
	}
	resp, err := g.Consumers.GetConsumer(context.Background(), &jetgatev1.GetConsumerRequest{Stream: stream, Consumer: consumer})
	if err != nil || resp.GetDeadLetters() != 1 {
		t.Fatalf("GetConsumer dead_letters: %v %v; want 1", resp.GetDeadLetters(), err)
	}
}

func TestTermWithReasonIsDeadLettered(t *testing.T) {
	e := newDLEnv(t)
	g := e.gateway()
	e.termIsDeadLettered(g)
}

// termIsDeadLettered publishes a message, fetches it through g, terms it
// with a reason, and checks its dead letter.
func (e *dlEnv) termIsDeadLettered(g *gwtest.Replica) {
	t := e.t
	t.Helper()
	seq := e.publish("orders.us", "bad", nil)
	ms := fetchVia(t, g.Consumers, 1, 5*time.Second)
	resp, err := g.Consumers.Term(context.Background(), &jetgatev1.TermRequest{Stream: stream, Consumer: consumer,
		Tokens: []string{ms[0].GetToken()}, Reason: "malformed order"})
	if err != nil || len(resp.GetFailures()) != 0 {
		t.Fatalf("term: %v %v", resp, err)
	}
	dl := e.waitDeadLetters(1)[0]
	wantHeader(t, dl, deadletter.HeaderReason, "TERM")
	wantHeader(t, dl, deadletter.HeaderTermReason, "malformed order")
	wantHeader(t, dl, deadletter.HeaderSeq, strconv.FormatUint(seq, 10))
	wantHeader(t, dl, deadletter.HeaderDeliveries, "1")
	if string(dl.Data) != "bad" {
		t.Errorf("dead letter data %q, want the original's", dl.Data)
	}
}

// A Term the gateway sent is dead-lettered though the server's advisory of
// it is never stored (a server shutting down drops it): the replica records
// the Term in the advisory stream itself once the server confirmed it. Here
// the advisory stream stops capturing the server's advisory, as a restart
// would lose it.
func TestATermWhoseAdvisoryIsLostIsDeadLettered(t *testing.T) {
	e := newDLEnv(t)
	g := e.gateway()
	ctx := context.Background()
	s, err := e.js.Stream(ctx, deadletter.AdvisoryStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	advised := "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED." + stream + "." + consumer
	cfg.Subjects = slices.DeleteFunc(cfg.Subjects, func(s string) bool { return s == advised })
	if _, err := e.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	took := func() uint64 { // what the advisory stream took: the start's probe, then records
		t.Helper()
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.LastSeq
	}
	before := took()
	e.termIsDeadLettered(g)
	if n := took() - before; n != 1 {
		t.Fatalf("the advisory stream took %d messages for one Term; want its record alone", n)
	}
	// A Nak is no Term: it is not recorded.
	e.publish("orders.us", "retry", nil)
	ms := fetchVia(t, g.Consumers, 1, 5*time.Second)
	if _, err := g.Consumers.Nak(ctx, &jetgatev1.NakRequest{Stream: stream, Consumer: consumer, Tokens: []string{ms[0].GetToken()}}); err != nil {
		t.Fatal(err)
	}
	if n := took() - before; n != 1 {
		t.Fatalf("the advisory stream took %d messages for a Term and a Nak; want the Term's record alone", n)
	}
}

func TestRedrivePutsDeadLettersBack(t *testing.T) {
	e := newDLEnv(t)
	g := e.gateway()
	e.publish("orders.eu", "again", nats.Header{"X-Trace": {"t1"}})
	runOut(t, g.Consumers)
	dl := e.waitDeadLetters(1)[0]

	ctx := context.Background()
	_, err := g.Consumers.Redrive(ctx, &jetgatev1.RedriveRequest{Stream: stream, Consumer: other})
	wantCode(t, err, codes.FailedPrecondition, "NO_DEAD_LETTER")
	resp, err := g.Consumers.Redrive(ctx, &jetgatev1.RedriveRequest{Stream: stream, Consumer: consumer, Seqs: []uint64{dl.Sequence + 100}})
	if err != nil || resp.GetRedriven() != 0 || len(resp.GetFailures()) != 1 || resp.GetFailures()[0].GetReason() != "DEAD_LETTER_NOT_FOUND" {
		t.Fatalf("redrive of a missing seq: %v %v", resp, err)
	}
	resp, err = g.Consumers.Redrive(ctx, &jetgatev1.RedriveRequest{Stream: stream, Consumer: consumer})
	if err != nil || resp.GetRedriven() != 1 || len(resp.GetFailures()) != 0 {
		t.Fatalf("redrive all: %v %v", resp, err)
	}
	if left := e.deadLetters(); len(left) != 0 {
		t.Fatalf("%d dead letters left after the redrive", len(left))
	}
	ms := fetchVia(t, g.Consumers, 1, 5*time.Second)
	if len(ms) != 1 || string(ms[0].GetData()) != "again" || ms[0].GetSubject() != "orders.eu" || ms[0].GetMetadata().GetNumDelivered() != 1 {
		t.Fatalf("the redriven message is not delivered afresh: %v", ms)
	}
	if h := ms[0].GetHeaders(); len(h["X-Trace"].GetValues()) != 1 || h[deadletter.HeaderReason] != nil {
		t.Fatalf("redriven headers %v; want the original's only", h)
	}
	resp2, err := g.Consumers.GetConsumer(ctx, &jetgatev1.GetConsumerRequest{Stream: stream, Consumer: consumer})
	if err != nil || resp2.GetDeadLetters() != 0 {
		t.Fatalf("GetConsumer after redrive: %v %v", resp2.GetDeadLetters(), err)
	}
}

// Advisories are kept while no gateway runs: messages that run out of
// deliveries meanwhile are dead-lettered, once each, when one starts again;
// and two replicas together copy each dead letter once.
func TestDeadLettersOutliveTheGatewayAndAreCopiedOnce(t *testing.T) {
	e := newDLEnv(t)
	g := e.gateway()
	g.Stop() // its advisory stream stays, capturing
	for i := range 3 {
		e.publish("orders.eu", strconv.Itoa(i), nil)
	}
	cons, err := e.js.Consumer(context.Background(), stream, consumer)
	if err != nil {
		t.Fatal(err)
	}
	for naks := 0; naks < 9; {
		batch, err := cons.Fetch(3, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			if err := m.Nak(); err != nil {
				t.Fatal(err)
			}
			naks++
		}
	}
	// A waiting pull makes the server notice the third deliveries are spent.
	wait, err := cons.Fetch(1, jetstream.FetchMaxWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for range wait.Messages() {
		t.Fatal("a delivery past max_deliver 3")
	}
	e.gateway()
	e.gateway()
	dls := e.waitDeadLetters(3)
	seen := map[string]bool{}
	for _, dl := range dls {
		seen[dl.Header.Get(deadletter.HeaderSeq)] = true
	}
	if len(seen) != 3 {
		t.Fatalf("dead letters of seqs %v; want each of the three once", seen)
	}
	// Nothing more comes: the advisory stream is drained.
	natstest.Eventually(t, 10*time.Second, "advisories worked off", func() bool {
		s, err := e.js.Stream(context.Background(), deadletter.AdvisoryStream)
		if err != nil {
			return false
		}
		info, err := s.Info(context.Background())
		return err == nil && info.State.Msgs == 0
	})
	if n := len(e.deadLetters()); n != 3 {
		t.Fatalf("%d dead letters after the advisories were worked off; want 3", n)
	}
}

func TestGetConsumerReportsTheOldestUnackedAge(t *testing.T) {
	e := newDLEnv(t)
	g := e.gateway()
	get := func() *jetgatev1.GetConsumerResponse {
		resp, err := g.Consumers.GetConsumer(context.Background(), &jetgatev1.GetConsumerRequest{Stream: stream, Consumer: consumer})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if age := get().GetOldestUnackedAge().AsDuration(); age != 0 {
		t.Fatalf("oldest unacked age %v with nothing in the stream", age)
	}
	published := time.Now()
	e.publish("orders.eu", "old", nil)
	ms := fetchVia(t, g.Consumers, 1, 5*time.Second)
	natstest.Eventually(t, 5*time.Second, "age grows", func() bool {
		return get().GetOldestUnackedAge().AsDuration() >= 100*time.Millisecond
	})
	if age := get().GetOldestUnackedAge().AsDuration(); age > time.Since(published)+time.Second {
		t.Fatalf("oldest unacked age %v; the message is only %v old", age, time.Since(published))
	}
	if resp, err := g.Consumers.Ack(context.Background(), &jetgatev1.AckRequest{Stream: stream, Consumer: consumer, Tokens: []string{ms[0].GetToken()}}); err != nil || len(resp.GetFailures()) != 0 {
		t.Fatalf("ack: %v %v", resp, err)
	}
	natstest.Eventually(t, 5*time.Second, "age back to 0", func() bool { return get().GetOldestUnackedAge().AsDuration() == 0 })
}

// With the catch-all on_demand pattern, callers who try to pause, fetch
// from and read jetgate's own dead-letter consumer get NOT_FOUND, over
// gRPC (REST goes through the same chain), and dead letters keep flowing
// meanwhile: every tenant's terminated messages are copied.
func TestTheCatchAllLeavesTheDeadLetterWorkerAlone(t *testing.T) {
	e := newDLEnv(t)
	g := gwtest.Start(e.t, replica.Options{
		Conn: natstest.Connect(e.t, e.ns),
		Consumers: []coreconsumer.Config{
			{Stream: stream, Name: consumer, DeadLetter: &coreconsumer.DeadLetter{Subject: dlqSubject, OnTerm: true}},
		},
		OnDemand: coreconsumer.OnDemand{Match: []coreconsumer.Match{{Stream: "*", Consumer: "*"}}},
		Keys:     e.keys,
	})
	ctx := context.Background()
	own := func(n int) {
		t.Helper()
		_, pe := g.Consumers.Pause(ctx, &jetgatev1.PauseRequest{Stream: deadletter.AdvisoryStream, Consumer: deadletter.WorkerDurable,
			PauseUntil: timestamppb.New(time.Now().Add(time.Hour))})
		_, fe := g.Consumers.Fetch(ctx, &jetgatev1.FetchRequest{Stream: deadletter.AdvisoryStream, Consumer: deadletter.WorkerDurable, Batch: 4})
		_, ge := g.Consumers.GetConsumer(ctx, &jetgatev1.GetConsumerRequest{Stream: deadletter.AdvisoryStream, Consumer: deadletter.WorkerDurable})
		for what, err := range map[string]error{"pause": pe, "fetch": fe, "get": ge} {
			if status.Code(err) != codes.NotFound {
				t.Fatalf("round %d: %s of jetgate's dead-letter consumer: %v; want NOT_FOUND", n, what, err)
			}
		}
	}
	for i := range 4 {
		own(i)
		e.publish("orders.eu", "bad "+strconv.Itoa(i), nil)
		ms := fetchVia(t, g.Consumers, 1, 5*time.Second)
		if len(ms) != 1 {
			t.Fatalf("round %d: fetched %d", i, len(ms))
		}
		if r, err := g.Consumers.Term(ctx, &jetgatev1.TermRequest{Stream: stream, Consumer: consumer, Tokens: []string{ms[0].GetToken()}}); err != nil || len(r.GetFailures()) != 0 {
			t.Fatalf("term: %v %v", r, err)
		}
	}
	e.waitDeadLetters(4)
}
