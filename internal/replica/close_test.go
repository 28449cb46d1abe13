package replica_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// A Fetch long-poll whose caller left (its client gave up, or the
// shutdown's grace cut it) leaves its pull open on the server, in the
// orphan pool; a message published then goes to that pull and waits there
// for the next Fetch. A replica that then stops gracefully should nak it
// back so that another replica delivers it at once, not after ack_wait.
func TestCloseNaksWhatAnAbandonedPullReceived(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	keys := token.RandomKeyring()
	cfg := []consumer.Config{{Stream: "ORDERS", Name: "billing"}}
	a := replicaOf(t, ns, keys, replica.Options{Consumers: cfg, RequestTimeout: 2 * time.Second})
	b := replicaOf(t, ns, keys, replica.Options{Consumers: cfg, RequestTimeout: 2 * time.Second})
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	fctx, leave := context.WithCancel(ctx)
	fetched := make(chan error, 1)
	go func() {
		_, err := a.Fetch(fctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 10, Expires: 25 * time.Second})
		fetched <- err
	}()
	cons, _ := js.Consumer(ctx, "ORDERS", "billing")
	natstest.Eventually(t, 5*time.Second, "the long Fetch waiting", func() bool {
		ci, err := cons.Info(ctx)
		return err == nil && ci.NumWaiting > 0
	})
	leave() // the caller goes; its pull stays open on the server
	<-fetched
	if _, err := js.Publish(ctx, "orders.1", []byte("m")); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 5*time.Second, "the message delivered to the abandoned pull", func() bool {
		ci, err := cons.Info(ctx)
		return err == nil && ci.NumAckPending == 1
	})

	began := time.Now()
	a.Close()
	t.Logf("Close took %v", time.Since(began))

	res, err := b.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 {
		ci, _ := cons.Info(ctx)
		t.Fatalf("the other replica got %d messages within 5s of the close; the message is hidden (ack pending %d) until its ack_wait", len(res.Messages), ci.NumAckPending)
	}
}

// A replica closing while NATS is away (its server stopped, or the network
// black-holed) returns within its bounds: its request timeout twice, a
// margin. The dead-letter worker's drain waited on NATS (nats.go's flush,
// 10s): 11 to 15s, a helper's test; and, now and then, the roster's watch
// stopping waited on its consumer's delete (nats.go's 5s).
func TestCloseWithNATSAwayIsBounded(t *testing.T) {
	for _, how := range []string{"stopped", "blackholed"} {
		t.Run(how, func(t *testing.T) {
			ns := natstest.Start(t)
			nc := natstest.Connect(t, ns)
			natstest.Stream(t, nc, "ORDERS", "orders.>")
			natstest.Stream(t, nc, "DLQ", "dlq.>")
			px := natstest.StartProxy(t, ns.Addr().String())
			conn := px.Connect(t)
			if how == "stopped" { // straight to the server: its stop closes the connection
				conn = natstest.Connect(t, ns, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond), nats.ReconnectBufSize(-1), nats.Timeout(200*time.Millisecond))
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r, err := replica.New(ctx, replica.Options{Conn: conn, Keys: token.RandomKeyring(), RequestTimeout: time.Second,
				Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing", DeadLetter: &consumer.DeadLetter{Subject: "dlq.billing", OnTerm: true}}}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(r.Close)
			js, _ := jetstream.New(nc)
			for range 3 {
				if _, err := js.Publish(ctx, "orders.1", []byte("m")); err != nil {
					t.Fatal(err)
				}
			}
			// A Consume stream open, and a lease held by a Fetch.
			cctx, leave := context.WithCancel(ctx)
			consumed := make(chan error, 1)
			got := make(chan struct{}, 10)
			go func() {
				consumed <- r.Consume(cctx, "ORDERS", "billing", consumer.ConsumeRequest{MaxMessages: 1, Heartbeat: time.Hour, AutoExtend: true}, func(ds []*consumer.Delivery) error {
					if len(ds) > 0 {
						got <- struct{}{}
					}
					return nil
				})
			}()
			<-got
			if _, err := r.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: time.Second}); err != nil {
				t.Fatal(err)
			}
			switch how {
			case "stopped":
				ns.Shutdown()
			case "blackholed":
				px.Blackhole()
			}
			leave()
			<-consumed
			began := time.Now()
			r.Close()
			took := time.Since(began)
			t.Logf("Close took %v", took)
			if took > 5*time.Second {
				t.Fatalf("Close took %v with NATS %s; its request timeout is 1s", took, how)
			}
		})
	}
}

// A call that reaches a replica once it has closed (a settle of one of its
// leases, a Fetch) is refused UNAVAILABLE, not served by a replica whose
// background work (keep-alives, naks of orphans) has stopped: a Fetch was
// served, and an Ack applied and answered UNAVAILABLE after the timeout.
func TestCallsAfterCloseAreUnavailable(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	keys := token.RandomKeyring()
	cfg := []consumer.Config{{Stream: "ORDERS", Name: "billing"}}
	a := replicaOf(t, ns, keys, replica.Options{Consumers: cfg, RequestTimeout: time.Second})
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range 2 {
		if _, err := js.Publish(ctx, "orders.1", []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	res, err := a.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: time.Second})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("fetch: %v %v", res, err)
	}
	a.Close()
	out, err := a.Settle(ctx, settle.Request{Op: lease.OpAck, Stream: "ORDERS", Consumer: "billing", Tokens: []string{res.Messages[0].Token}})
	cons, _ := js.Consumer(ctx, "ORDERS", "billing")
	ci, _ := cons.Info(ctx)
	t.Logf("settle after close: %+v, %v; the server's ack floor %d, ack pending %d", out, err, ci.AckFloor.Stream, ci.NumAckPending)
	if err == nil && (len(out) != 1 || !errors.Is(out[0].Err, errs.ErrUnavailable)) {
		t.Errorf("a settle after close: %+v, %v; want UNAVAILABLE", out, err)
	}
	res, err = a.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: time.Second})
	t.Logf("fetch after close: %d messages, %v", len(res.Messages), err)
	if !errors.Is(err, errs.ErrUnavailable) {
		t.Errorf("a Fetch after close: %d messages, %v; want UNAVAILABLE", len(res.Messages), err)
	}
}

// A replica closing naks back what its consumers kept while it is still in
// the roster and hears resets: a reset made meanwhile through another
// replica waits for its word and voids what it kept. Before, it left the
// roster and stopped hearing resets first, then waited (here for a Term's
// record, up to its request timeout) before the naks: its Nak of the
// delivery from before the reset landed on the one after it, which the
// other replica had handed out, and the message was delivered again while
// that lease was live (a helper's test, 4 of 4 runs).
func TestAClosingReplicasNakDoesNotLandOnADeliveryAfterAReset(t *testing.T) {
	e := spareAndWaitingRecord(t)
	a, b, ctx, n := e.a, e.b, e.ctx, e.n
	closed := make(chan struct{})
	go func() {
		a.Close()
		close(closed)
	}()
	natstest.Eventually(t, 10*time.Second, "a closing", func() bool {
		_, err := a.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: time.Second})
		return errors.Is(err, errs.ErrUnavailable)
	})

	// The reset, through b, and every delivery after it, handed out by b.
	if _, err := b.Seek(ctx, "ORDERS", "billing", replica.SeekTarget{Seq: 1}); err != nil {
		t.Fatal(err)
	}
	held := map[uint64]uint64{} // stream seq: delivery count
	for len(held) < n {
		res, err := b.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: time.Second})
		if err != nil || len(res.Messages) != 1 {
			t.Fatalf("b's fetch after the reset: %d messages, %v (holding %v)", len(res.Messages), err, held)
		}
		m := res.Messages[0]
		held[m.Meta.StreamSeq] = m.Meta.Delivered
	}
	select {
	case <-closed:
		t.Log("a closed before b's deliveries after the reset: the race was not hit")
	default:
	}
	e.reload() // the Term's record may be stored now: a's close goes on
	<-closed
	// b holds every delivery after the reset for a minute: nothing more to
	// deliver.
	again, err := b.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Messages) > 0 {
		m := again.Messages[0]
		t.Fatalf("stream seq %d handed out again (delivery %d) while b's lease of its delivery %d after the reset is live: a's Nak of the delivery before the reset landed on it",
			m.Meta.StreamSeq, m.Meta.Delivered, held[m.Meta.StreamSeq])
	}
}

// A replica closing naks back the rest of a Fetch it kept (its pull ended)
// so that another replica delivers it at once, with a timeout of its own:
// a Term's record that could not be stored yet (here refused; NATS just
// back, or its stream full) took the close's one timeout, and the naks went
// with a context already ended (a helper's test): the kept messages waited
// out ack_wait (a minute here).
func TestCloseNaksWhatItKeptWhileATermsRecordWaits(t *testing.T) {
	e := spareAndWaitingRecord(t)
	began := time.Now()
	e.a.Close()
	t.Logf("Close took %v", time.Since(began))
	got := 0
	deadline := time.Now().Add(5 * time.Second)
	for got < e.kept && time.Now().Before(deadline) {
		res, err := e.b.Fetch(e.ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		got += len(res.Messages)
	}
	if got != e.kept {
		t.Fatalf("the other replica got %d of the %d messages the closed one kept, within 5s; the rest wait out ack_wait", got, e.kept)
	}
}

// spareEnv is two replicas of billing (ORDERS, ack_wait a minute) and audit
// (AUDIT, a dead letter on_term): a has handed out part of a Fetch of n
// messages and kept the rest (kept), and a Term of audit's whose record
// its user may not store until reload() allows it.
type spareEnv struct {
	ns     *server.Server
	a, b   *replica.Replica
	ctx    context.Context
	n      int
	kept   int
	reload func(deny ...string)
}

func spareAndWaitingRecord(t *testing.T) spareEnv {
	ns, reload := withReloadableUsers(t)
	admin := natstest.Connect(t, ns, nats.UserInfo("admin", "admin"))
	natstest.Stream(t, admin, "ORDERS", "orders.>")
	natstest.Stream(t, admin, "AUDIT", "audit.>")
	natstest.Stream(t, admin, "DLQ", "dlq.>")
	keys := token.RandomKeyring()
	cfg := []consumer.Config{
		{Stream: "ORDERS", Name: "billing", AckWait: time.Minute},
		{Stream: "AUDIT", Name: "audit", DeadLetter: &consumer.DeadLetter{Subject: "dlq.audit", OnTerm: true}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	mk := func() *replica.Replica {
		r, err := replica.New(ctx, replica.Options{Conn: natstest.Connect(t, ns, nats.UserInfo("jetgate", "jetgate")), Keys: keys,
			RequestTimeout: 5 * time.Second, Consumers: cfg})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		return r
	}
	a, b := mk(), mk()
	js, _ := jetstream.New(admin)

	// Messages whose headers are not UTF-8: a response carries each four
	// times over, so a Fetch of them all answers with what fits 4 MiB and
	// keeps the rest for the next Fetch (spare), until shortly before
	// their leases end.
	const n = 18 // a Fetch of them all
	bad := strings.Repeat("\xff", 60<<10)
	for range n {
		if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: "orders.1", Data: []byte("m"), Header: nats.Header{"X-Bad": []string{bad}}}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := a.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: n, Expires: 2 * time.Second})
	if err != nil || len(res.Messages) == n {
		t.Fatalf("a's fetch: %d messages, %v; want fewer than %d, the rest kept", len(res.Messages), err, n)
	}
	cons, _ := js.Consumer(ctx, "ORDERS", "billing")
	if ci, _ := cons.Info(ctx); ci.NumAckPending != n {
		t.Fatalf("ack pending %d; want %d", ci.NumAckPending, n)
	}
	// A Term of a's whose record waits (its user may not store it yet), so
	// that a's close waits for it.
	if _, err := js.Publish(ctx, "audit.1", []byte("m")); err != nil {
		t.Fatal(err)
	}
	ares, err := a.Fetch(ctx, "AUDIT", "audit", consumer.FetchRequest{Batch: 1, Expires: 2 * time.Second})
	if err != nil || len(ares.Messages) != 1 {
		t.Fatalf("audit fetch: %v %v", ares, err)
	}
	reload("_JETGATE.TERMINATED.>")
	if out, err := a.Settle(ctx, settle.Request{Op: lease.OpTerm, Stream: "AUDIT", Consumer: "audit", Reason: "bad", Tokens: []string{ares.Messages[0].Token}}); err != nil || out[0].Err != nil {
		t.Fatalf("term: %+v %v", out, err)
	}

	return spareEnv{ns: ns, a: a, b: b, ctx: ctx, n: n, kept: n - len(res.Messages), reload: reload}
}

// A close naks back the lease of a Consume stream that ended just before
// it: the consumer's Close first waits for that stream's last pull (up to
// consumeMaxWait, 1s, or LostGrace more from a silent server), so the naks
// have a whole request timeout of their own (the app's is 5s). A reviewer
// found them left 3/4 of one shared with the roster, and at a 1s timeout
// the wait took it all; at 1s it still can (a guard, at 2s, not a proof).
func TestNaksAfterAConsumeEndedJustBeforeClose(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	keys := token.RandomKeyring()
	cfg := []consumer.Config{{Stream: "ORDERS", Name: "billing", AckWait: time.Minute}}
	a := replicaOf(t, ns, keys, replica.Options{Consumers: cfg, RequestTimeout: 2 * time.Second})
	b := replicaOf(t, ns, keys, replica.Options{Consumers: cfg, RequestTimeout: 2 * time.Second})
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cctx, leave := context.WithCancel(ctx)
	got := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- a.Consume(cctx, "ORDERS", "billing", consumer.ConsumeRequest{MaxMessages: 2, Heartbeat: time.Hour, AutoExtend: true}, func(ds []*consumer.Delivery) error {
			if len(ds) > 0 {
				select {
				case got <- struct{}{}:
				default:
				}
			}
			return nil
		})
	}()
	cons, _ := js.Consumer(ctx, "ORDERS", "billing")
	natstest.Eventually(t, 5*time.Second, "a's Consume pulling", func() bool {
		ci, err := cons.Info(ctx)
		return err == nil && ci.NumWaiting > 0
	})
	if _, err := js.Publish(ctx, "orders.1", []byte("m")); err != nil {
		t.Fatal(err)
	}
	<-got
	// the Consume pulls again for its second message: a fresh pull, ~1s
	natstest.Eventually(t, 5*time.Second, "a's Consume pulling again", func() bool {
		ci, err := cons.Info(ctx)
		return err == nil && ci.NumWaiting > 0
	})
	leave() // the stream ends (a shutdown's grace cut it): its lease is given back
	<-done
	began := time.Now()
	a.Close()
	t.Logf("a's Close took %v", time.Since(began))
	res, err := b.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 {
		ci, _ := cons.Info(ctx)
		t.Fatalf("the other replica got nothing within 5s of a's close: the lease the ended Consume gave back was not naked (ack pending %d, ack_wait a minute)", ci.NumAckPending)
	}
}
