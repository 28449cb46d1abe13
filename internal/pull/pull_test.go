package pull

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/natstest"
)

const (
	testStream   = "ORDERS"
	testConsumer = "billing"
)

// env is a real server with stream ORDERS (orders.>) and the durable,
// explicit-ack pull consumer billing.
type env struct {
	t  *testing.T
	ns *server.Server
	nc *nats.Conn
	js jetstream.JetStream
}

func newEnv(t *testing.T, edit ...func(*jetstream.ConsumerConfig)) *env {
	t.Helper()
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, testStream, "orders.>")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ns: ns, nc: nc, js: js}
	cfg := jetstream.ConsumerConfig{Durable: testConsumer, AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second}
	for _, f := range edit {
		f(&cfg)
	}
	if _, err := js.CreateConsumer(e.ctx(), testStream, cfg); err != nil {
		t.Fatalf("create consumer: %v", err)
	}
	return e
}

func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	e.t.Cleanup(cancel)
	return ctx
}

func (e *env) publish(n int, data []byte) {
	e.t.Helper()
	for i := 0; i < n; i++ {
		if _, err := e.js.Publish(e.ctx(), "orders.new", data); err != nil {
			e.t.Fatalf("publish: %v", err)
		}
	}
}

func (e *env) info() *jetstream.ConsumerInfo {
	e.t.Helper()
	c, err := e.js.Consumer(e.ctx(), testStream, testConsumer)
	if err != nil {
		e.t.Fatalf("consumer: %v", err)
	}
	ci, err := c.Info(e.ctx())
	if err != nil {
		e.t.Fatalf("consumer info: %v", err)
	}
	return ci
}

// waiting waits until the server holds n waiting pulls of the consumer.
func (e *env) waiting(n int) {
	e.t.Helper()
	natstest.Eventually(e.t, 5*time.Second, "pulls waiting on the server", func() bool { return e.info().NumWaiting == n })
}

// counter counts calls of a release func.
type counter struct{ n atomic.Int32 }

func (c *counter) release()   { c.n.Add(1) }
func (c *counter) calls() int { return int(c.n.Load()) }

func (e *env) start(nc *nats.Conn, req Request, c *counter) *Pull {
	e.t.Helper()
	p, err := Start(nc, NextSubject(API(""), testStream, testConsumer), req, c.release)
	if err != nil {
		e.t.Fatalf("start pull: %v", err)
	}
	return p
}

// await reads p until it ends (or the server goes silent), with a generous
// bound, so that a pull that never ends fails the test instead of hanging
// it.
func await(t *testing.T, p *Pull) ([]Msg, time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	var all []Msg
	for {
		msgs, ended, err := p.Next(ctx, time.Millisecond, time.Second, nil)
		all = append(all, msgs...)
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatal("the pull did not end within 20s")
		}
		if ended || err != nil {
			return all, time.Since(start), err
		}
	}
}

// (a) A pull ends when its batch is filled, with the messages clocked and
// carrying their ack subjects.
func TestPullEndsWhenTheBatchIsFilled(t *testing.T) {
	e := newEnv(t)
	e.publish(3, []byte("x"))
	var c counter
	before := time.Now()
	p := e.start(e.nc, NewRequest(2, 5*time.Second, 0, Priority{}), &c)
	msgs, took, err := await(t, p)
	after := time.Now()
	if err != nil {
		t.Fatalf("await: %v, want nil (batch filled)", err)
	}
	if len(msgs) != 2 {
		t.Fatalf("got %d messages, want 2", len(msgs))
	}
	if took > 3*time.Second {
		t.Errorf("a filled batch took %v: it waited for expiry", took)
	}
	for i, m := range msgs {
		if m.At.Before(before) || m.At.After(after) {
			t.Errorf("msg %d: At %v, not within the pull [%v, %v]", i, m.At, before, after)
		}
		if !strings.HasPrefix(m.Reply, "$JS.ACK.") {
			t.Errorf("msg %d: reply %q, want a $JS.ACK subject", i, m.Reply)
		}
		md, err := ParseAckSubject(m.Reply)
		if err != nil {
			t.Fatalf("msg %d: %v", i, err)
		}
		if md.StreamSeq != uint64(i+1) || md.Delivered != 1 {
			t.Errorf("msg %d: stream seq %d delivered %d, want %d and 1", i, md.StreamSeq, md.Delivered, i+1)
		}
	}
	if got := e.info().NumAckPending; got != 2 {
		t.Errorf("server: %d ack pending, want 2 (exactly the batch delivered)", got)
	}
	if c.calls() != 1 {
		t.Errorf("release called %d times, want 1", c.calls())
	}
}

// (b) A no_wait pull on an empty consumer ends at once with no messages.
func TestNoWaitPullOnAnEmptyConsumerEndsWithNoMessages(t *testing.T) {
	e := newEnv(t)
	var c counter
	p := e.start(e.nc, noWait(NewRequest(1, 0, 0, Priority{})), &c)
	msgs, took, err := await(t, p)
	if !errors.Is(err, jetstream.ErrNoMessages) {
		t.Fatalf("await: %v, want ErrNoMessages", err)
	}
	if len(msgs) != 0 {
		t.Errorf("got %d messages from an empty consumer", len(msgs))
	}
	if took > time.Second {
		t.Errorf("took %v, want at once", took)
	}
}

// A no_wait pull returns what is available and ends without waiting out
// its expiry for the rest of the batch (one round trip, DESIGN §3).
func TestNoWaitPullReturnsWhatIsAvailableAndEnds(t *testing.T) {
	e := newEnv(t)
	e.publish(2, []byte("x"))
	var c counter
	p := e.start(e.nc, noWait(NewRequest(5, 10*time.Second, 0, Priority{})), &c)
	msgs, took, err := await(t, p)
	if !errors.Is(err, jetstream.ErrNoMessages) {
		t.Fatalf("await: %v, want ErrNoMessages after what was available", err)
	}
	if len(msgs) != 2 {
		t.Fatalf("got %d messages, want the 2 available", len(msgs))
	}
	if took > 5*time.Second {
		t.Errorf("took %v: the pull waited for its expiry", took)
	}
}

// (c) A waiting pull for one message ends the moment one is published.
func TestWaitingPullEndsWhenAMessageArrives(t *testing.T) {
	e := newEnv(t)
	var c counter
	p := e.start(e.nc, NewRequest(1, 2*time.Second, 0, Priority{}), &c)
	e.waiting(1)
	published := time.Now()
	e.publish(1, []byte("x"))
	msgs, _, err := await(t, p)
	took := time.Since(published)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("await: %d messages, %v; want 1 and nil", len(msgs), err)
	}
	if took > time.Second {
		t.Errorf("ended %v after the publish, want at once", took)
	}
	if string(msgs[0].Data) != "x" {
		t.Errorf("data %q", msgs[0].Data)
	}
}

// (d) A caller that leaves does not end the pull: what the server still
// sends is kept for Take, and Take reports the end when the server ends it.
func TestNextReturnsOnCancelAndThePullStaysOpen(t *testing.T) {
	t.Parallel() // waits out timers; its own server
	e := newEnv(t)
	var c counter
	const expires = 2 * time.Second
	before := time.Now()
	p := e.start(e.nc, NewRequest(2, expires, 0, Priority{}), &c)
	e.waiting(1)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	msgs, _, err := p.Next(ctx, time.Millisecond, time.Second, nil)
	if !errors.Is(err, context.Canceled) || len(msgs) != 0 {
		t.Fatalf("await on a canceled ctx: %d messages, %v; want none and context.Canceled", len(msgs), err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("await on a canceled ctx took %v, want at once", took)
	}
	if c.calls() != 0 {
		t.Fatalf("release called when the caller left; the pull is still open on the server")
	}
	if _, ended, _ := p.Take(time.Now()); ended {
		t.Fatal("Take: the pull ended when its caller left")
	}
	if n := e.info().NumWaiting; n != 1 {
		t.Fatalf("server: %d waiting pulls, want the abandoned one still waiting", n)
	}

	e.publish(1, []byte("late"))
	var late []Msg
	natstest.Eventually(t, 5*time.Second, "the late message reaches Take", func() bool {
		got, _, _ := p.Take(time.Now())
		late = append(late, got...)
		return len(late) > 0
	})
	if len(late) != 1 || string(late[0].Data) != "late" {
		t.Fatalf("Take: %d messages, want the one published after the caller left", len(late))
	}
	if !strings.HasPrefix(late[0].Reply, "$JS.ACK.") || late[0].At.IsZero() {
		t.Errorf("late message: reply %q, At %v", late[0].Reply, late[0].At)
	}

	var endedAt time.Time
	natstest.Eventually(t, 10*time.Second, "Take reports the end of the pull", func() bool {
		got, ended, at := p.Take(time.Now())
		if len(got) != 0 {
			t.Errorf("Take returned %d more messages", len(got))
		}
		endedAt = at
		return ended
	})
	// The server ended it at its expiry, not Take's lost rule.
	if endedAt.Before(before.Add(expires-100*time.Millisecond)) || !endedAt.Before(before.Add(expires+LostGrace)) {
		t.Errorf("ended at %v after start, want about the expiry %v", endedAt.Sub(before), expires)
	}
	if c.calls() != 1 {
		t.Errorf("release called %d times after the pull ended, want 1", c.calls())
	}
	if msgs, ended, at := p.Take(time.Now().Add(time.Hour)); len(msgs) != 0 || !ended || !at.Equal(endedAt) {
		t.Errorf("Take after the end: %d messages, ended %v at %v; want none, true, %v", len(msgs), ended, at, endedAt)
	}
}

// (e) release is called exactly once per pull, however it ended.
func TestReleaseIsCalledOncePerPull(t *testing.T) {
	t.Run("batch", func(t *testing.T) {
		e := newEnv(t)
		e.publish(2, []byte("x"))
		var c counter
		p := e.start(e.nc, NewRequest(1, 5*time.Second, 0, Priority{}), &c)
		if msgs, _, err := await(t, p); err != nil || len(msgs) != 1 {
			t.Fatalf("await: %d, %v", len(msgs), err)
		}
		if c.calls() != 1 {
			t.Fatalf("release called %d times when the batch filled, want 1", c.calls())
		}
		// A later Take, past the lost rule, does not release it again.
		if _, ended, _ := p.Take(time.Now().Add(time.Hour)); !ended {
			t.Error("Take: not ended")
		}
		if c.calls() != 1 {
			t.Errorf("release called %d times, want 1", c.calls())
		}
	})
	t.Run("status", func(t *testing.T) {
		e := newEnv(t)
		var c counter
		p := e.start(e.nc, noWait(NewRequest(1, 0, 0, Priority{})), &c)
		if _, _, err := await(t, p); !errors.Is(err, jetstream.ErrNoMessages) {
			t.Fatalf("await: %v", err)
		}
		if c.calls() != 1 {
			t.Fatalf("release called %d times when a status ended the pull, want 1", c.calls())
		}
		if _, ended, _ := p.Take(time.Now().Add(time.Hour)); !ended {
			t.Error("Take: not ended")
		}
		if c.calls() != 1 {
			t.Errorf("release called %d times, want 1", c.calls())
		}
	})
	t.Run("lost", func(t *testing.T) {
		e := newEnv(t)
		var c counter
		const expires = 5 * time.Second
		before := time.Now()
		p := e.start(e.nc, NewRequest(1, expires, 0, Priority{}), &c)
		e.waiting(1)
		if _, ended, _ := p.Take(time.Now()); ended || c.calls() != 0 {
			t.Fatalf("Take within the expiry: ended %v, %d releases", ended, c.calls())
		}
		// Past its expiry the server may still be about to end it: Take
		// waits out the grace.
		if _, ended, _ := p.Take(before.Add(expires + LostGrace - 50*time.Millisecond)); ended || c.calls() != 0 {
			t.Fatalf("Take within the grace after expiry: ended %v, %d releases", ended, c.calls())
		}
		// Past its expiry and the grace, Take takes the server to be gone.
		lostAt := time.Now().Add(expires + LostGrace + time.Millisecond)
		_, ended, endedAt := p.Take(lostAt)
		if !ended || !endedAt.Equal(lostAt) {
			t.Fatalf("Take past expiry+grace: ended %v at %v, want true at %v", ended, endedAt, lostAt)
		}
		if c.calls() != 1 {
			t.Fatalf("release called %d times by the lost rule, want 1", c.calls())
		}
		// The server's own end of the pull comes later and changes nothing.
		e.waiting(0)
		if err := e.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		if _, ended, at := p.Take(time.Now().Add(time.Hour)); !ended || !at.Equal(lostAt) {
			t.Errorf("Take after the server's end: ended %v at %v, want true at %v", ended, at, lostAt)
		}
		if c.calls() != 1 {
			t.Errorf("release called %d times, want 1", c.calls())
		}
	})
}

// noWait is r asking for what is available now.
func noWait(r Request) Request {
	r.NoWait = true
	return r
}

// (f) How long a pull waits and how often the server must show it is alive.
func TestNewRequest(t *testing.T) {
	tests := []struct {
		wait              time.Duration
		expires, hearbeat time.Duration
	}{
		{0, ImmediateExpiry, 0},
		{-time.Second, ImmediateExpiry, 0},
		{time.Millisecond, ImmediateExpiry, 0},
		{ImmediateExpiry, ImmediateExpiry, 0},
		{4*ImmediateExpiry - time.Nanosecond, 4*ImmediateExpiry - time.Nanosecond, 0},
		{4 * ImmediateExpiry, 4 * ImmediateExpiry, 2 * ImmediateExpiry},
		{time.Second, time.Second, 500 * time.Millisecond},
		{2 * MaxHeartbeat, 2 * MaxHeartbeat, MaxHeartbeat},
		{2*MaxHeartbeat + time.Millisecond, 2*MaxHeartbeat + time.Millisecond, MaxHeartbeat},
		{30 * time.Second, 30 * time.Second, MaxHeartbeat},
	}
	for _, tt := range tests {
		r := NewRequest(7, tt.wait, 4096, Priority{})
		want := Request{Batch: 7, Expires: tt.expires, MaxBytes: 4096, Heartbeat: tt.hearbeat}
		if r != want {
			t.Errorf("NewRequest(7, %v, 4096, Priority{}) = %+v, want %+v", tt.wait, r, want)
		}
	}
	if r := NewRequest(1, time.Second, 0, Priority{}); r.NoWait || r.MaxBytes != 0 || r.Batch != 1 {
		t.Errorf("NewRequest(1, 1s, 0, Priority{}) = %+v", r)
	}
}

// The request's JSON is the server's: durations in nanoseconds, zero
// fields left out.
func TestRequestJSON(t *testing.T) {
	tests := []struct {
		req  Request
		want string
	}{
		{Request{Batch: 2, Expires: 5 * time.Second, NoWait: true, MaxBytes: 100, Heartbeat: time.Second},
			`{"batch":2,"expires":5000000000,"no_wait":true,"max_bytes":100,"idle_heartbeat":1000000000}`},
		{Request{Batch: 1, Expires: ImmediateExpiry}, `{"batch":1,"expires":20000000}`},
		{Request{Batch: 1, Priority: Priority{Group: "main", MinPending: 5, MinAckPending: 2, Priority: 3, PinID: "p1"}},
			`{"batch":1,"group":"main","min_pending":5,"min_ack_pending":2,"priority":3,"id":"p1"}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.req)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tt.want {
			t.Errorf("json %+v = %s, want %s", tt.req, b, tt.want)
		}
	}
}

// (g) A waiting pull notices a server that went silent through its missing
// heartbeats, long before its expiry.
func TestLostServerEndsNextWithNoHeartbeat(t *testing.T) {
	t.Parallel() // waits out timers; its own server
	e := newEnv(t)
	proxy := natstest.StartProxy(t, e.ns.Addr().String())
	pnc := natstest.Connect(t, e.ns, nats.DontRandomize(), nats.SetCustomDialer(proxyDialer{proxy.Addr}))
	var c counter
	req := NewRequest(1, 25*time.Second, 0, Priority{})
	if req.Heartbeat != MaxHeartbeat {
		t.Fatalf("heartbeat %v, want %v", req.Heartbeat, MaxHeartbeat)
	}
	p := e.start(pnc, req, &c)
	e.waiting(1)
	proxy.Blackhole() // no goodbye from the server: only missing heartbeats tell
	msgs, took, err := await(t, p)
	if !errors.Is(err, jetstream.ErrNoHeartbeat) || len(msgs) != 0 {
		t.Fatalf("await: %d messages, %v; want none and ErrNoHeartbeat", len(msgs), err)
	}
	// Three missed heartbeats of 1s, noticed on a 1s tick: about 4s.
	if took > 8*time.Second {
		t.Errorf("noticed the lost server after %v, want about %v", took, missedHeartbeats*MaxHeartbeat+MaxHeartbeat)
	}
	if took < time.Second+MaxHeartbeat/2 {
		t.Errorf("gave up after %v, before %d heartbeats were missed", took, missedHeartbeats)
	}
	// await does not end the pull: it may still be open on the server.
	if c.calls() != 0 {
		t.Errorf("release called %d times; only the server or Take's lost rule ends a pull", c.calls())
	}
}

// A pull too short for heartbeats is taken to be lost when the server has
// been silent for its expiry and the grace.
func TestLostServerEndsNextWithoutHeartbeats(t *testing.T) {
	t.Parallel() // waits out timers; its own server
	e := newEnv(t)
	proxy := natstest.StartProxy(t, e.ns.Addr().String())
	pnc := natstest.Connect(t, e.ns, nats.DontRandomize(), nats.SetCustomDialer(proxyDialer{proxy.Addr}))
	// The proxy goes dark before the pull reaches the server.
	proxy.Blackhole()
	req := NewRequest(1, 4*ImmediateExpiry-time.Millisecond, 0, Priority{})
	if req.Heartbeat != 0 {
		t.Fatalf("heartbeat %v, want none", req.Heartbeat)
	}
	var c counter
	p := e.start(pnc, req, &c)
	msgs, took, err := await(t, p)
	if !errors.Is(err, jetstream.ErrNoHeartbeat) || len(msgs) != 0 {
		t.Fatalf("await: %d messages, %v; want none and ErrNoHeartbeat", len(msgs), err)
	}
	if took < LostGrace {
		t.Errorf("gave up after %v, before the expiry and grace %v", took, req.Expires+LostGrace)
	}
	if took > req.Expires+LostGrace+5*time.Second {
		t.Errorf("noticed the lost server after %v, want about %v", took, req.Expires+LostGrace)
	}
	if c.calls() != 0 {
		t.Errorf("release called %d times by await", c.calls())
	}
}

// proxyDialer sends every NATS dial to the proxy.
type proxyDialer struct{ addr string }

func (d proxyDialer) Dial(network, _ string) (net.Conn, error) { return net.Dial(network, d.addr) }

// A pull is never sent on a connection that is not connected: it would wait
// in the reconnect buffer and reach the server after its caller left.
func TestStartWhenNotConnected(t *testing.T) {
	t.Run("reconnecting", func(t *testing.T) {
		ns := natstest.Start(t)
		nc := natstest.Connect(t, ns, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
		ns.Shutdown()
		natstest.Eventually(t, 5*time.Second, "client reconnecting", nc.IsReconnecting)
		buffered, err := nc.Buffered()
		if err != nil {
			t.Fatal(err)
		}
		var c counter
		_, err = Start(nc, NextSubject(API(""), testStream, testConsumer), NewRequest(1, time.Second, 0, Priority{}), c.release)
		if !errors.Is(err, errs.ErrUnavailable) {
			t.Fatalf("Start while reconnecting: %v, want ErrUnavailable", err)
		}
		if after, _ := nc.Buffered(); after != buffered {
			t.Errorf("reconnect buffer grew from %d to %d bytes: the pull was queued", buffered, after)
		}
		if c.calls() != 0 {
			t.Errorf("release called for a pull that was never sent")
		}
	})
	t.Run("closed", func(t *testing.T) {
		ns := natstest.Start(t)
		nc := natstest.Connect(t, ns)
		nc.Close()
		var c counter
		if _, err := Start(nc, NextSubject(API(""), testStream, testConsumer), NewRequest(1, time.Second, 0, Priority{}), c.release); !errors.Is(err, errs.ErrUnavailable) {
			t.Fatalf("Start on a closed connection: %v, want ErrUnavailable", err)
		}
		if c.calls() != 0 {
			t.Errorf("release called for a pull that was never sent")
		}
	})
}

// The statuses a real server ends pulls with reach the caller as status.go
// maps them (its Status and Description headers are read as the server
// writes them).
func TestServerStatusesEndPulls(t *testing.T) {
	t.Run("max batch", func(t *testing.T) {
		e := newEnv(t, func(c *jetstream.ConsumerConfig) { c.MaxRequestBatch = 10 })
		var c counter
		p := e.start(e.nc, NewRequest(11, time.Second, 0, Priority{}), &c)
		_, _, err := await(t, p)
		var se *StatusError
		if !errors.Is(err, ErrRefused) || !errors.As(err, &se) {
			t.Fatalf("await: %v, want a StatusError refusal", err)
		}
		if se.Code != "409" || se.Description != "Exceeded MaxRequestBatch of 10" {
			t.Errorf("StatusError %q %q, want the server's 409 Exceeded MaxRequestBatch of 10", se.Code, se.Description)
		}
		if c.calls() != 1 {
			t.Errorf("release called %d times, want 1", c.calls())
		}
	})
	t.Run("max bytes", func(t *testing.T) {
		e := newEnv(t)
		e.publish(1, make([]byte, 1000))
		var c counter
		p := e.start(e.nc, NewRequest(1, 5*time.Second, 100, Priority{}), &c)
		if _, _, err := await(t, p); !errors.Is(err, jetstream.ErrMaxBytesExceeded) {
			t.Fatalf("await: %v, want ErrMaxBytesExceeded", err)
		}
	})
	t.Run("consumer deleted", func(t *testing.T) {
		e := newEnv(t)
		var c counter
		p := e.start(e.nc, NewRequest(1, 10*time.Second, 0, Priority{}), &c)
		e.waiting(1)
		if err := e.js.DeleteConsumer(e.ctx(), testStream, testConsumer); err != nil {
			t.Fatal(err)
		}
		if _, _, err := await(t, p); !errors.Is(err, jetstream.ErrConsumerDeleted) {
			t.Fatalf("await: %v, want ErrConsumerDeleted", err)
		}
		if c.calls() != 1 {
			t.Errorf("release called %d times, want 1", c.calls())
		}
	})
	t.Run("max waiting", func(t *testing.T) {
		e := newEnv(t, func(c *jetstream.ConsumerConfig) { c.MaxWaiting = 1 })
		// Another client's pull takes the only place.
		inbox := nats.NewInbox()
		sub, err := e.nc.SubscribeSync(inbox)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
		if err := e.nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT."+testStream+"."+testConsumer, inbox,
			[]byte(`{"batch":1,"expires":20000000000}`)); err != nil {
			t.Fatal(err)
		}
		e.waiting(1)
		// Without heartbeats the server says why it refuses.
		req := NewRequest(1, 4*ImmediateExpiry-time.Millisecond, 0, Priority{})
		var c counter
		p := e.start(e.nc, req, &c)
		if _, _, err := await(t, p); !errors.Is(err, ErrExceededMaxWaiting) {
			t.Fatalf("await: %v, want ErrExceededMaxWaiting", err)
		}
	})
	t.Run("requests pending", func(t *testing.T) {
		e := newEnv(t, func(c *jetstream.ConsumerConfig) { c.MaxAckPending = 1 })
		e.publish(2, []byte("x"))
		// One delivery holds the only ack-pending place...
		var c1 counter
		if msgs, _, err := await(t, e.start(e.nc, NewRequest(1, time.Second, 0, Priority{}), &c1)); err != nil || len(msgs) != 1 {
			t.Fatalf("first pull: %d, %v", len(msgs), err)
		}
		// ...so a pull for more waits on the server with nothing to get...
		inbox := nats.NewInbox()
		sub, err := e.nc.SubscribeSync(inbox)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
		if err := e.nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT."+testStream+"."+testConsumer, inbox,
			[]byte(`{"batch":5,"expires":20000000000}`)); err != nil {
			t.Fatal(err)
		}
		e.waiting(1)
		// ...and a no_wait pull behind it is refused.
		var c counter
		p := e.start(e.nc, noWait(NewRequest(1, time.Second, 0, Priority{})), &c)
		if _, _, err := await(t, p); !errors.Is(err, ErrRequestsPending) {
			t.Fatalf("await: %v, want ErrRequestsPending", err)
		}
	})
}

// respondAsACluster answers pulls for stream/consumer on nc the way a
// clustered consumer was seen to: 409 Batch Completed first, then the
// messages it counts (send of them, of the batch asked for).
func respondAsACluster(t *testing.T, nc *nats.Conn, stream, consumer string, send int) {
	t.Helper()
	sub, err := nc.Subscribe("$JS.API.CONSUMER.MSG.NEXT."+stream+"."+consumer, func(m *nats.Msg) {
		_ = nc.PublishMsg(&nats.Msg{Subject: m.Reply, Header: nats.Header{"Status": {"409"}, "Description": {"Batch Completed"}}})
		for i := 1; i <= send; i++ {
			// A client may not publish with a $JS.ACK reply; the pull does
			// not read it.
			_ = nc.PublishMsg(&nats.Msg{Subject: m.Reply, Reply: "reordered.ack." + strconv.Itoa(i), Data: []byte("x")})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// A pull told its batch is complete before the messages of the batch have
// come waits for them: dropping them would leave each a delivery to no one
// until ack_wait. If some never come, it ends with what came, soon after.
func TestBatchCompletedAheadOfItsMessagesWaitsForThem(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	respondAsACluster(t, natstest.Connect(t, ns), "REORDERED", "all", 3)
	respondAsACluster(t, natstest.Connect(t, ns), "REORDERED", "short", 2)

	var c counter
	p, err := Start(nc, NextSubject(API(""), "REORDERED", "all"), NewRequest(3, 5*time.Second, 0, Priority{}), c.release)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _, err := await(t, p)
	if err != nil || len(msgs) != 3 {
		t.Fatalf("await: %d messages, %v; want all 3 the server counted, no error", len(msgs), err)
	}
	if c.calls() != 1 {
		t.Errorf("release called %d times, want 1", c.calls())
	}

	var c2 counter
	p, err = Start(nc, NextSubject(API(""), "REORDERED", "short"), NewRequest(3, 5*time.Second, 0, Priority{}), c2.release)
	if err != nil {
		t.Fatal(err)
	}
	msgs, took, err := await(t, p)
	if !errors.Is(err, jetstream.ErrBatchCompleted) || len(msgs) != 2 {
		t.Fatalf("await: %d messages, %v; want the 2 that came and ErrBatchCompleted", len(msgs), err)
	}
	if took > completeGrace+2*MaxHeartbeat {
		t.Errorf("gave up on the missing message after %v, want within %v", took, completeGrace+2*MaxHeartbeat)
	}
	if c2.calls() != 1 {
		t.Errorf("release called %d times, want 1", c2.calls())
	}
}
