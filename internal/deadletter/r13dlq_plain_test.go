package deadletter

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/natstest"
)

const shippingMaxDelivered = advisoryMaxDeliv + "ORDERS.shipping"

// startWith runs a worker of routes and plain consumers until the end of
// the test (or until the returned stop).
func (e *env) startWith(routes []Route, plain [][2]string) (stop func()) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	w, err := Start(ctx, Options{JS: e.js, Routes: routes, Plain: plain, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		e.t.Fatal(err)
	}
	stop = sync.OnceFunc(func() { w.Stop(context.Background()) })
	e.t.Cleanup(stop)
	return stop
}

// advise stores n MAX_DELIVERIES advisories of ORDERS/shipping in the
// advisory stream, as the server's are captured there.
func (e *env) advise(n int) {
	e.t.Helper()
	for i := range n {
		data, _ := json.Marshal(advisory{Stream: "ORDERS", Consumer: "shipping", StreamSeq: uint64(i + 1), Deliveries: 1})
		if _, err := e.js.PublishAsync(shippingMaxDelivered, data); err != nil {
			e.t.Fatal(err)
		}
	}
	select {
	case <-e.js.PublishAsyncComplete():
	case <-time.After(within):
		e.t.Fatal("advisories not stored")
	}
}

// A consumer whose dead_letter was taken out of the configuration keeps
// its advisories captured (the advisory stream's subjects are only ever
// added), and they were held for ever, each in the worker's room: once
// 4,096 of them waited, no other consumer's dead letter was copied again.
// One of a consumer the deployment serves without a dead letter is dropped
// once it has waited holdPlain (here none).
func TestAdvisoriesOfAConsumerWhoseDeadLetterWasTakenOutHoldNothingBack(t *testing.T) {
	e := newEnv(t)
	billing := Route{Stream: "ORDERS", Consumer: "billing", Subject: dlqSubject}
	stop := e.startWith([]Route{billing, {Stream: "ORDERS", Consumer: "shipping", Subject: "dlq.shipping"}}, nil)
	stop() // shipping's dead letter taken out of the configuration
	held := holdPlain
	holdPlain = 0
	t.Cleanup(func() { holdPlain = held })
	e.startWith([]Route{billing}, [][2]string{{"ORDERS", "shipping"}})

	e.advise(workerMaxAckPending + 100)
	e.publish("billing's")
	seq := e.runOut()
	natstest.Eventually(t, within, "billing's dead letter", func() bool {
		return len(natstest.StreamMsgs(t, e.js, "DLQ", dlqSubject)) == 1
	})
	if got := natstest.StreamMsgs(t, e.js, "DLQ", dlqSubject)[0].Header.Get(HeaderSeq); got != "1" || seq != 1 {
		t.Fatalf("dead letter of seq %s; want billing's %d", got, seq)
	}
	natstest.Eventually(t, within, "shipping's advisories dropped", func() bool {
		return e.streamState(AdvisoryStream).Msgs == 0
	})
}

// Within holdPlain an advisory of a consumer served without a dead letter
// is held, not dropped: a replica of a configuration that gives it one may
// be starting (a rollout), and copies it.
func TestAnAdvisoryOfAConsumerServedWithoutADeadLetterIsHeldAWhile(t *testing.T) {
	e := newEnv(t)
	stop := e.startWith([]Route{{Stream: "ORDERS", Consumer: "shipping", Subject: "dlq.shipping"}}, nil)
	stop()
	e.startWith([]Route{{Stream: "ORDERS", Consumer: "billing", Subject: dlqSubject}}, [][2]string{{"ORDERS", "shipping"}})
	e.advise(1)
	natstest.Eventually(t, within, "the advisory taken by the worker", func() bool {
		c, err := e.js.Consumer(context.Background(), AdvisoryStream, WorkerDurable)
		if err != nil {
			return false
		}
		info, err := c.Info(context.Background())
		return err == nil && info.NumAckPending == 1
	})
	if n := e.streamState(AdvisoryStream).Msgs; n != 1 {
		t.Fatalf("the advisory stream holds %d advisories; want shipping's, held", n)
	}
}
