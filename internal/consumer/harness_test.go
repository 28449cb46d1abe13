package consumer_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/pull"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

const (
	stream = "ORDERS"
	name   = "billing"
	// within bounds every wait on a condition: generous, so that a loaded
	// machine is slow rather than wrong.
	within = 10 * time.Second
)

// env is one real NATS server, one Consumer bound to ORDERS/billing with its
// Run loop going, and a connection of the test's own.
type env struct {
	t     *testing.T
	ns    *natsserver.Server
	nc    *nats.Conn // the Consumer's connection (pulls and settles)
	js    jetstream.JetStream
	plain jetstream.Consumer // the same durable through nats.go, on the test's connection
	c     *consumer.Consumer
	keys  *token.Keyring
	self  token.IssuerID

	mu     sync.Mutex
	peers  []string                        // what Deps.Peers names (setPeers)
	awake  func(ctx context.Context) error // what Deps.Awake does (nil: nothing)
	termed []termRecord                    // what Deps.Terminated was told (withTermRecords)
	// stopRun ends the Consumer's Run and waits for it, as a replica does
	// before it closes the Consumer (the test's end does too).
	stopRun func()
}

// termRecord is a Term the server confirmed, as Deps.Terminated is told.
type termRecord struct {
	lease.Ref
	reason string
}

// terms is what Deps.Terminated has been told so far.
func (e *env) terms() []termRecord {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.termed)
}

// setAwake makes Deps.Awake run f.
func (e *env) setAwake(f func(ctx context.Context) error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.awake = f
}

// setPeers makes Deps.Peers name ids as the consumer's other replicas.
func (e *env) setPeers(ids ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.peers = ids
}

// start binds a Consumer to ORDERS/billing as cfg (its Stream and Name are
// filled in) describes and runs it until the end of the test.
func start(t *testing.T, cfg consumer.Config) *env {
	t.Helper()
	return startWith(t, cfg, nil, 2*time.Second)
}

// startWith is start with the Consumer's settles sent on a connection that
// settles makes (nil: the Consumer's own), each awaited up to timeout.
func startWith(t *testing.T, cfg consumer.Config, settles func(*natsserver.Server) *nats.Conn, timeout time.Duration) *env {
	t.Helper()
	ns := natstest.Start(t)
	own := natstest.Connect(t, ns)
	natstest.Stream(t, own, stream, "orders.>")
	return bindOn(t, ns, own, cfg, settles, timeout)
}

// bindOn binds the Consumer to ORDERS/billing, which own has made, on a
// connection of its own to ns.
func bindOn(t *testing.T, ns *natsserver.Server, own *nats.Conn, cfg consumer.Config, settles func(*natsserver.Server) *nats.Conn, timeout time.Duration) *env {
	t.Helper()
	return bindTelling(t, ns, own, cfg, settles, timeout, nil, 0)
}

// startLedgered is start with the settle ledger every replica has.
func startLedgered(t *testing.T, cfg consumer.Config) *env {
	t.Helper()
	ns := natstest.Start(t)
	own := natstest.Connect(t, ns)
	natstest.Stream(t, own, stream, "orders.>")
	return bindTelling(t, ns, own, cfg, nil, 2*time.Second, nil, withLedger)
}

// startRecordingTerms is startWith with the Terms the server confirms
// recorded (Deps.Terminated: env.termed).
// And with the extras of with.
func startRecordingTerms(t *testing.T, cfg consumer.Config, settles func(*natsserver.Server) *nats.Conn, timeout time.Duration, with extras) *env {
	t.Helper()
	ns := natstest.Start(t)
	own := natstest.Connect(t, ns)
	natstest.Stream(t, own, stream, "orders.>")
	return bindTelling(t, ns, own, cfg, settles, timeout, nil, withTermRecords|with)
}

// extras are what a replica gives a Consumer that bindOn leaves out.
type extras uint8

const (
	withLedger      extras = 1 << iota // the settle ledger every replica has
	withTermRecords                    // Deps.Terminated, into env.termed
)

// bindTelling is bindOn with the Consumer's OnReset (nil: none), and with
// the extras of with.
func bindTelling(t *testing.T, ns *natsserver.Server, own *nats.Conn, cfg consumer.Config, settles func(*natsserver.Server) *nats.Conn,
	timeout time.Duration, onReset func(id string, peers int), with extras) *env {
	t.Helper()
	js, err := jetstream.New(own)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{
		t: t, ns: ns, js: js,
		nc:   natstest.Connect(t, ns),
		keys: token.RandomKeyring(),
		self: token.NewIssuerID(),
	}
	cfg.Stream, cfg.Name = stream, name
	settleConn := e.nc
	if settles != nil {
		settleConn = settles(ns)
	}
	sender, err := settle.NewSender(settleConn, timeout)
	if err != nil {
		t.Fatal(err)
	}
	if err := settleConn.Flush(); err != nil { // the reply subscription is in place
		t.Fatal(err)
	}
	gjs, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var ledger *settle.Ledger
	if with&withLedger != 0 {
		if ledger, err = settle.OpenLedger(ctx, gjs, 1); err != nil {
			t.Fatal(err)
		}
	}
	var terminated func(context.Context, string, string, string, []lease.Ref)
	if with&withTermRecords != 0 {
		terminated = func(_ context.Context, _, _, reason string, ds []lease.Ref) {
			e.mu.Lock()
			defer e.mu.Unlock()
			for _, d := range ds {
				e.termed = append(e.termed, termRecord{d, reason})
			}
		}
	}
	e.c, err = consumer.Bind(ctx, gjs, cfg, consumer.Deps{
		Terminated: terminated,
		Ledger:     ledger,
		Conn:       e.nc,
		Sender:     sender,
		Keys:       e.keys,
		Self:       e.self,
		Timeout:    2 * time.Second,
		Log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnReset:    onReset,
		Peers: func(context.Context, string, string) ([]string, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			return e.peers, nil
		},
		Awake: func(ctx context.Context) error {
			e.mu.Lock()
			f := e.awake
			e.mu.Unlock()
			if f == nil {
				return nil
			}
			return f(ctx)
		},
	})
	if err != nil {
		_ = sender.Close()
		t.Fatalf("bind: %v", err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		e.c.Run(runCtx)
	}()
	var stopOnce sync.Once
	e.stopRun = func() { stopOnce.Do(func() { stop(); <-ran }) }
	// Registered after the connections: runs before they close.
	t.Cleanup(func() {
		e.stopRun()
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		e.c.Close(ctx)
		_ = sender.Close()
	})
	if e.plain, err = js.Consumer(ctx, stream, name); err != nil {
		t.Fatal(err)
	}
	return e
}

// publish stores data on subject and returns its stream sequence.
func (e *env) publish(subject, data string) uint64 {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	ack, err := e.js.Publish(ctx, subject, []byte(data))
	if err != nil {
		e.t.Fatalf("publish %s: %v", subject, err)
	}
	return ack.Sequence
}

// info is the consumer's state on the server.
func (e *env) info() *jetstream.ConsumerInfo {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	ci, err := e.plain.Info(ctx)
	if err != nil {
		e.t.Fatalf("consumer info: %v", err)
	}
	return ci
}

// fetch is a Fetch through the Consumer that must succeed.
func (e *env) fetch(req consumer.FetchRequest) consumer.FetchResult {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within+req.Expires)
	defer cancel()
	res, err := e.c.Fetch(ctx, req)
	if err != nil {
		e.t.Fatalf("fetch: %v", err)
	}
	return res
}

// pullPlain pulls one message with nats.go on the same durable, as a client
// that is not the gateway would, waiting up to wait for it.
func (e *env) pullPlain(wait time.Duration) jetstream.Msg {
	e.t.Helper()
	b, err := e.plain.Fetch(1, jetstream.FetchMaxWait(wait))
	if err != nil {
		e.t.Fatalf("plain fetch: %v", err)
	}
	var got jetstream.Msg
	for m := range b.Messages() {
		got = m
	}
	if err := b.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
		e.t.Fatalf("plain fetch: %v", err)
	}
	return got
}

// abandonFetch starts a Fetch, waits until its pull waits on the server,
// and cancels it, as a caller that goes away does. The pull stays open on
// the server: JetStream cannot withdraw it.
func (e *env) abandonFetch(req consumer.FetchRequest) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.c.Fetch(ctx, req)
		done <- err
	}()
	returned := false
	e.t.Cleanup(func() { // a Fetch the test failed before canceling
		cancel()
		if !returned {
			<-done
		}
	})
	natstest.Eventually(e.t, within, "the Fetch's pull waiting on the server", func() bool {
		return e.info().NumWaiting == 1
	})
	cancel()
	select {
	case err := <-done:
		returned = true
		if !errors.Is(err, context.Canceled) {
			e.t.Fatalf("canceled fetch: %v, want context.Canceled", err)
		}
	case <-time.After(within):
		e.t.Fatal("a canceled Fetch did not return")
	}
}

// counted is the Consumer's count of orphans with the given outcome.
func (e *env) counted(outcome consumer.OrphanOutcome) float64 {
	return float64(e.c.Counts().Orphans[outcome].Load())
}

// tap records every message the server routes on any subject, in the order
// the server routed them to it: pull requests, deliveries, status replies
// to pull inboxes and the settles sent to ack subjects. One subscription on
// ">" keeps that order across subjects.
type tap struct {
	mu   sync.Mutex
	msgs []*nats.Msg
	wake chan struct{}
}

func startTap(t *testing.T, ns *natsserver.Server) *tap {
	t.Helper()
	nc := natstest.Connect(t, ns)
	tp := &tap{wake: make(chan struct{}, 1)}
	sub, err := nc.Subscribe(">", func(m *nats.Msg) {
		tp.mu.Lock()
		tp.msgs = append(tp.msgs, m)
		tp.mu.Unlock()
		select {
		case tp.wake <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return tp
}

// waitFor returns the index of the first message at or after from that
// matches, waiting up to within for it.
func (tp *tap) waitFor(t *testing.T, from int, what string, match func(*nats.Msg) bool) int {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		tp.mu.Lock()
		for i := from; i < len(tp.msgs); i++ {
			if match(tp.msgs[i]) {
				tp.mu.Unlock()
				return i
			}
		}
		from = max(from, len(tp.msgs))
		tp.mu.Unlock()
		select {
		case <-tp.wake:
		case <-deadline.C:
			t.Fatalf("tap: no %s within %v", what, within)
		}
	}
}

// before returns the messages recorded before index n.
func (tp *tap) before(n int) []*nats.Msg {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.msgs[:n:n]
}

// deliveryOf reports whether m is a delivery of stream sequence seq, and
// which delivery.
func deliveryOf(m *nats.Msg, seq uint64) (uint64, bool) {
	md, err := pull.ParseAckSubject(m.Reply)
	if err != nil || md.Stream != stream || md.Consumer != name || md.StreamSeq != seq {
		return 0, false
	}
	return md.Delivered, true
}

// settleOf reports whether m is a settle sent for stream sequence seq with
// the given body (such as "-NAK" or "+ACK"), and for which delivery.
func settleOf(m *nats.Msg, seq uint64, body string) (uint64, bool) {
	md, err := pull.ParseAckSubject(m.Subject)
	if err != nil || md.Stream != stream || md.Consumer != name || md.StreamSeq != seq ||
		!bytes.HasPrefix(m.Data, []byte(body)) {
		return 0, false
	}
	return md.Delivered, true
}

// pullRequest reports whether m is a pull request on the consumer.
func pullRequest(m *nats.Msg) bool {
	return m.Subject == "$JS.API.CONSUMER.MSG.NEXT."+stream+"."+name
}

// endOf reports whether m is the status with which the server ended the
// pull whose inbox is inbox (a heartbeat is not an end).
func endOf(m *nats.Msg, inbox string) bool {
	if m.Subject != inbox || len(m.Data) != 0 || m.Header == nil {
		return false
	}
	st := m.Header.Get("Status")
	return st != "" && st != "100"
}
