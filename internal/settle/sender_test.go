package settle_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/settle"
)

func newSender(t *testing.T, nc *nats.Conn, timeout time.Duration) *settle.Sender {
	t.Helper()
	s, err := settle.NewSender(nc, timeout)
	if err != nil {
		t.Fatalf("new sender: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func subscribe(t *testing.T, nc *nats.Conn, subject string, fn nats.MsgHandler) {
	t.Helper()
	sub, err := nc.Subscribe(subject, fn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// subscribeRefusing answers every request on subject with a 500 status.
func subscribeRefusing(t *testing.T, nc *nats.Conn, subject string) {
	t.Helper()
	subscribe(t, nc, subject, func(m *nats.Msg) {
		r := nats.NewMsg(m.Reply)
		r.Header.Set("Status", "500")
		_ = m.RespondMsg(r)
	})
}

// send runs s.Send with a bound, so that a Send that never returns fails
// the test instead of hanging it.
func send(t *testing.T, ctx context.Context, s *settle.Sender, subjects []string, payload string) ([]error, time.Duration) {
	t.Helper()
	type result struct {
		errs []error
		took time.Duration
	}
	done := make(chan result, 1)
	go func() {
		start := time.Now()
		res := s.Send(ctx, subjects, []byte(payload))
		done <- result{res, time.Since(start)}
	}()
	select {
	case r := <-done:
		if len(r.errs) != len(subjects) {
			t.Fatalf("Send returned %d errors for %d subjects", len(r.errs), len(subjects))
		}
		return r.errs, r.took
	case <-time.After(30 * time.Second):
		t.Fatal("Send did not return within 30s")
		return nil, 0
	}
}

// deliveries publishes n messages to a fresh stream and pulls them through
// an explicit-ack durable, returning their ack subjects unacked.
func deliveries(t *testing.T, nc *nats.Conn, n int) (jetstream.Consumer, []string) {
	t.Helper()
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 0; i < n; i++ {
		if _, err := js.Publish(ctx, "orders.new", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{
		Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(n, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for m := range batch.Messages() {
		subjects = append(subjects, m.Reply())
	}
	if err := batch.Error(); err != nil {
		t.Fatal(err)
	}
	if len(subjects) != n {
		t.Fatalf("pulled %d messages, want %d", len(subjects), n)
	}
	return cons, subjects
}

func consumerInfo(t *testing.T, cons jetstream.Consumer) *jetstream.ConsumerInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ci, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ci
}

func TestSendAcksRealDeliveries(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	cons, subjects := deliveries(t, nc, 3)
	if ci := consumerInfo(t, cons); ci.NumAckPending != 3 {
		t.Fatalf("before: %d ack pending, want 3", ci.NumAckPending)
	}
	s := newSender(t, nc, 5*time.Second)
	res, _ := send(t, context.Background(), s, subjects, "+ACK")
	for i, err := range res {
		if err != nil {
			t.Errorf("settle %d: %v", i, err)
		}
	}
	// A confirmed settle is one the server has applied.
	ci := consumerInfo(t, cons)
	if ci.NumAckPending != 0 || ci.AckFloor.Consumer != 3 || ci.AckFloor.Stream != 3 {
		t.Errorf("after: %d ack pending, ack floor %d/%d; want 0 and 3/3", ci.NumAckPending, ci.AckFloor.Consumer, ci.AckFloor.Stream)
	}
}

func TestSendToNobodyIsNoResponders(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	s := newSender(t, nc, 5*time.Second)
	res, took := send(t, context.Background(), s, []string{"$JS.ACK.GONE.billing.1.1.1.0.0", "nobody.home"}, "+ACK")
	for i, err := range res {
		if !errors.Is(err, settle.ErrNoResponders) {
			t.Errorf("settle %d: %v, want ErrNoResponders", i, err)
		}
		if errors.Is(err, settle.ErrUnconfirmed) {
			t.Errorf("settle %d: %v; no responders is not unconfirmed", i, err)
		}
	}
	if took > 3*time.Second {
		t.Errorf("took %v: no responders is known at once, not after the timeout", took)
	}
}

func TestSendUnansweredIsUnconfirmed(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	var got atomic.Int32
	subscribe(t, nc, "silent.>", func(*nats.Msg) { got.Add(1) })
	const timeout = 300 * time.Millisecond
	s := newSender(t, nc, timeout)
	res, took := send(t, context.Background(), s, []string{"silent.a", "silent.b"}, "+ACK")
	for i, err := range res {
		if !errors.Is(err, settle.ErrUnconfirmed) || !errors.Is(err, errs.ErrUnavailable) {
			t.Errorf("settle %d: %v, want ErrUnconfirmed and ErrUnavailable", i, err)
		}
	}
	if took < timeout {
		t.Errorf("gave up after %v, before the %v timeout", took, timeout)
	}
	if took > timeout+3*time.Second {
		t.Errorf("took %v, want about the %v timeout", took, timeout)
	}
	if n := got.Load(); n != 2 {
		t.Errorf("the responder got %d settles, want 2 (sent, not confirmed)", n)
	}
}

func TestSendCanceledMidWaitIsUnconfirmed(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	got := make(chan struct{}, 1)
	subscribe(t, nc, "silent.>", func(*nats.Msg) {
		select {
		case got <- struct{}{}:
		default:
		}
	})
	s := newSender(t, nc, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		errs []error
		at   time.Time
	}
	done := make(chan result, 1)
	go func() {
		res := s.Send(ctx, []string{"silent.a"}, []byte("+ACK"))
		done <- result{res, time.Now()}
	}()
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the settle was not sent")
	}
	canceled := time.Now()
	cancel()
	select {
	case r := <-done:
		err := r.errs[0]
		if !errors.Is(err, settle.ErrUnconfirmed) || !errors.Is(err, context.Canceled) {
			t.Errorf("Send: %v, want ErrUnconfirmed wrapping context.Canceled", err)
		}
		if !errors.Is(err, errs.ErrUnavailable) {
			t.Errorf("Send: %v, want it to match ErrUnavailable", err)
		}
		if d := r.at.Sub(canceled); d > 2*time.Second {
			t.Errorf("Send returned %v after the cancel, want at once", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Send did not return after its ctx was canceled")
	}
}

// The responder answers nothing until it holds every request of the batch:
// only a sender that publishes them all before waiting gets its replies.
func TestSendPipelines(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	const n = 10
	var (
		mu   sync.Mutex
		held []*nats.Msg
	)
	subscribe(t, nc, "settle.>", func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		held = append(held, m)
		if len(held) == n {
			for _, h := range held {
				_ = h.Respond(nil)
			}
		}
	})
	subjects := make([]string, n)
	for i := range subjects {
		subjects[i] = fmt.Sprintf("settle.%d", i)
	}
	s := newSender(t, nc, 10*time.Second)
	res, _ := send(t, context.Background(), s, subjects, "+ACK")
	for i, err := range res {
		if err != nil {
			t.Errorf("settle %d: %v", i, err)
		}
	}
}

// Every outcome is reported at its subject's index, whatever order replies
// come in.
func TestSendOutcomesKeepTheirIndexes(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	cons, acks := deliveries(t, nc, 2)
	subscribe(t, nc, "silent.>", func(*nats.Msg) {})
	subscribeRefusing(t, nc, "refuse.>")
	s := newSender(t, nc, 500*time.Millisecond)
	subjects := []string{"silent.0", acks[0], "nobody.home", "refuse.0", acks[1]}
	res, _ := send(t, context.Background(), s, subjects, "+ACK")
	if !errors.Is(res[0], settle.ErrUnconfirmed) {
		t.Errorf("settle 0 (unanswered): %v, want ErrUnconfirmed", res[0])
	}
	if res[1] != nil || res[4] != nil {
		t.Errorf("settles 1 and 4 (acks): %v, %v; want nil", res[1], res[4])
	}
	if !errors.Is(res[2], settle.ErrNoResponders) {
		t.Errorf("settle 2 (no responders): %v, want ErrNoResponders", res[2])
	}
	if !errors.Is(res[3], errs.ErrUnavailable) || errors.Is(res[3], settle.ErrUnconfirmed) || errors.Is(res[3], settle.ErrNoResponders) {
		t.Errorf("settle 3 (answered with a status): %v, want ErrUnavailable only", res[3])
	}
	if ci := consumerInfo(t, cons); ci.NumAckPending != 0 {
		t.Errorf("%d ack pending, want both deliveries acked", ci.NumAckPending)
	}
}

// Concurrent batches on one Sender each get their own replies.
func TestSendRoutesRepliesToTheirBatch(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	subscribe(t, nc, "ok.>", func(m *nats.Msg) { _ = m.Respond(nil) })
	s := newSender(t, nc, 10*time.Second)
	const workers, rounds, size = 4, 10, 5
	var wg sync.WaitGroup
	failures := make(chan string, workers*rounds*size)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Even workers settle on a served subject, odd ones on nobody's.
			prefix := "ok"
			if w%2 == 1 {
				prefix = "nobody"
			}
			subjects := make([]string, size)
			for i := range subjects {
				subjects[i] = fmt.Sprintf("%s.%d.%d", prefix, w, i)
			}
			for r := 0; r < rounds; r++ {
				for i, err := range s.Send(context.Background(), subjects, []byte("+ACK")) {
					if (prefix == "ok") != (err == nil) || (prefix == "nobody" && !errors.Is(err, settle.ErrNoResponders)) {
						failures <- fmt.Sprintf("worker %d round %d settle %d on %s: %v", w, r, i, prefix, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Error(f)
	}
}

// A settle is never sent on a connection that is not connected: in the
// reconnect buffer it could reach the server after its lease's deadline
// and land on the next delivery.
func TestSendWhenNotConnected(t *testing.T) {
	t.Run("reconnecting", func(t *testing.T) {
		ns := natstest.Start(t)
		nc := natstest.Connect(t, ns, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
		s := newSender(t, nc, 5*time.Second)
		ns.Shutdown()
		natstest.Eventually(t, 5*time.Second, "client reconnecting", nc.IsReconnecting)
		buffered, err := nc.Buffered()
		if err != nil {
			t.Fatal(err)
		}
		res, took := send(t, context.Background(), s, []string{"$JS.ACK.ORDERS.billing.1.1.1.0.0", "any.subject"}, "+ACK")
		for i, err := range res {
			if !errors.Is(err, errs.ErrUnavailable) || errors.Is(err, settle.ErrUnconfirmed) {
				t.Errorf("settle %d: %v, want ErrUnavailable (not sent)", i, err)
			}
		}
		if after, _ := nc.Buffered(); after != buffered {
			t.Errorf("reconnect buffer grew from %d to %d bytes: a settle was queued", buffered, after)
		}
		if took > 3*time.Second {
			t.Errorf("took %v: nothing was sent, so nothing is waited for", took)
		}
	})
	t.Run("closed", func(t *testing.T) {
		ns := natstest.Start(t)
		nc := natstest.Connect(t, ns)
		watch := natstest.Connect(t, ns)
		var got atomic.Int32
		subscribe(t, watch, "watched.>", func(*nats.Msg) { got.Add(1) })
		s := newSender(t, nc, 5*time.Second)
		nc.Close()
		res, took := send(t, context.Background(), s, []string{"watched.a", "watched.b"}, "+ACK")
		for i, err := range res {
			if !errors.Is(err, errs.ErrUnavailable) || errors.Is(err, settle.ErrUnconfirmed) {
				t.Errorf("settle %d: %v, want ErrUnavailable (not sent)", i, err)
			}
		}
		if took > 3*time.Second {
			t.Errorf("took %v: nothing was sent, so nothing is waited for", took)
		}
		if err := watch.Flush(); err != nil {
			t.Fatal(err)
		}
		if n := got.Load(); n != 0 {
			t.Errorf("%d settles reached a subscriber from a closed connection", n)
		}
	})
}

// A settle in flight as the connection drops is unconfirmed at once: its
// reply, if the server sent one, went to the dropped connection, and a retry
// made only after the request timeout could be past its lease's deadline.
func TestSendInFlightAsTheConnectionDropsIsUnconfirmedAtOnce(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	watch := natstest.Connect(t, ns)
	got := make(chan struct{}, 2)
	subscribe(t, watch, "silent.>", func(*nats.Msg) { got <- struct{}{} })
	s := newSender(t, nc, time.Minute)
	type result struct{ errs []error }
	done := make(chan result, 1)
	go func() {
		done <- result{s.Send(context.Background(), []string{"silent.a", "silent.b"}, []byte("+TERM"))}
	}()
	for range 2 {
		select {
		case <-got:
		case <-time.After(10 * time.Second):
			t.Fatal("the settles were not sent")
		}
	}
	ns.Shutdown()
	select {
	case r := <-done:
		for i, err := range r.errs {
			if !errors.Is(err, settle.ErrUnconfirmed) || !errors.Is(err, errs.ErrUnavailable) {
				t.Errorf("settle %d: %v, want ErrUnconfirmed (sent, its outcome unknown)", i, err)
			}
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Send still waited 5s after the connection dropped, for a minute's timeout")
	}
}

// A Nak in flight as the connection drops waits out its timeout: applied,
// it had the server redeliver at once, and a retry sent within the lease
// would land on that delivery.
func TestSendOfANakWaitsOutItsTimeoutAsTheConnectionDrops(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	watch := natstest.Connect(t, ns)
	got := make(chan struct{}, 1)
	subscribe(t, watch, "silent.>", func(*nats.Msg) { got <- struct{}{} })
	const timeout = time.Second
	s := newSender(t, nc, timeout)
	done := make(chan []error, 1)
	start := time.Now()
	go func() { done <- s.Send(context.Background(), []string{"silent.a"}, []byte("-NAK")) }()
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the Nak was not sent")
	}
	ns.Shutdown()
	select {
	case res := <-done:
		if !errors.Is(res[0], settle.ErrUnconfirmed) {
			t.Errorf("the Nak: %v; want ErrUnconfirmed", res[0])
		}
		if took := time.Since(start); took < timeout {
			t.Errorf("the Nak gave up after %v, before its %v timeout", took, timeout)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Send did not return")
	}
}
