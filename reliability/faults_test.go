package reliability

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

// The short form of each scenario runs with the test suite; JETGATE_FAULTS=long
// runs the long form (more messages, more faults).
var long = os.Getenv("JETGATE_FAULTS") == "long"

func scale(short, lng int) int {
	if long {
		return lng
	}
	return short
}

const (
	stream   = "ORDERS"
	consumer = "billing"
)

func reconnecting() []nats.Option {
	return []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond), nats.ReconnectBufSize(-1)}
}

func gateway(t *testing.T, nc *nats.Conn, keys *token.Keyring, ackWait time.Duration) *gwtest.Replica {
	t.Helper()
	return gwtest.Start(t, replica.Options{
		Conn:           nc,
		Consumers:      []coreconsumer.Config{{Stream: stream, Name: consumer, AckWait: ackWait, MaxAckPending: 1024}},
		Keys:           keys,
		RequestTimeout: time.Second,
		Logger:         testLogger(t),
	})
}

// testLogger logs to the test's output with -v and JETGATE_FAULTS_LOG=1.
func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("JETGATE_FAULTS_LOG") == "" {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func driver(gs ...*gwtest.Replica) *Driver {
	d := &Driver{Stream: stream, Consumer: consumer, Checker: NewChecker(), Batch: 50,
		Expires: 500 * time.Millisecond, RPCTimeout: 2 * time.Second, Quiesce: 8 * time.Second}
	for _, g := range gs {
		d.Publishers = append(d.Publishers, g.Streams)
		d.Consumers = append(d.Consumers, g.Consumers)
	}
	return d
}

// run publishes n messages and consumes them all with workers, calling
// fault (if any) while traffic flows, and returns the checker's report.
func run(t *testing.T, d *Driver, n, workers int, within time.Duration, fault func(ctx context.Context)) Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	pubErr := make(chan error, 1)
	published := make(chan struct{})
	go func() {
		defer close(published)
		pubErr <- d.Publish(ctx, t.Name(), n)
	}()
	faultDone := make(chan struct{})
	go func() {
		defer close(faultDone)
		if fault != nil {
			fault(ctx)
		}
	}()
	err := d.Consume(ctx, workers, published)
	<-published
	if perr := <-pubErr; err == nil {
		err = perr
	}
	<-faultDone
	r := d.Checker.Report()
	st := d.Stats()
	t.Logf("%s: %v; rpc errors %v, slowest failed rpc %v, longest stall %v", t.Name(), r, st.Errors, st.SlowestError, st.LongestStall)
	if err != nil {
		t.Fatal(err)
	}
	if r.Lost != 0 || r.Unexpected != 0 {
		t.Fatalf("lost %d, unexpected %d", r.Lost, r.Unexpected)
	}
	return r
}

// assertDrained checks the server's side: nothing pending, nothing waiting
// for an ack. It is what makes settles of unknown outcome count as done.
func assertDrained(t *testing.T, nc *nats.Conn, r Report) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var ci *jetstream.ConsumerInfo
	natstest.Eventually(t, 30*time.Second, "consumer info", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		c, err := js.Consumer(ctx, stream, consumer)
		if err == nil {
			ci, err = c.Info(ctx)
		}
		return err == nil
	})
	if ci.NumAckPending != 0 || ci.NumPending != 0 || ci.AckFloor.Stream != uint64(r.Published) {
		t.Fatalf("consumer not drained: ack pending %d, pending %d, ack floor %d of %d",
			ci.NumAckPending, ci.NumPending, ci.AckFloor.Stream, r.Published)
	}
}

// consumerInfo is the consumer's state on the server.
func consumerInfo(t *testing.T, nc *nats.Conn) *jetstream.ConsumerInfo {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := js.Consumer(ctx, stream, consumer)
	if err != nil {
		t.Fatal(err)
	}
	ci, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ci
}

// waitPublished blocks until n publishes are confirmed (or ctx ends).
func waitPublished(ctx context.Context, c *Checker, n int) {
	for ctx.Err() == nil && c.Report().Published < n {
		backoff(ctx, 10*time.Millisecond)
	}
}

func TestFaultNATSRestartMidTraffic(t *testing.T) {
	dir := t.TempDir()
	ns := natstest.StartIn(t, dir, -1)
	port := ns.Addr().(*net.TCPAddr).Port
	nc := natstest.Connect(t, ns, reconnecting()...)
	natstest.Stream(t, nc, stream, "orders.>")
	d := driver(gateway(t, nc, token.RandomKeyring(), 5*time.Second))
	n, rounds := scale(600, 5000), scale(1, 4)
	r := run(t, d, n, 4, 3*time.Minute, func(ctx context.Context) {
		for i := 1; i <= rounds; i++ {
			waitPublished(ctx, d.Checker, i*n/(rounds+1))
			ns.Shutdown()
			ns.WaitForShutdown()
			backoff(ctx, 500*time.Millisecond) // an outage, not a blip
			ns = natstest.StartIn(t, dir, port)
		}
	})
	// RPCs during the outage fail fast: none outlived its own deadline.
	if st := d.Stats(); st.SlowestError > d.Expires+d.RPCTimeout+time.Second {
		t.Fatalf("an RPC took %v to fail", st.SlowestError)
	}
	assertDrained(t, nc, r)
}

func TestFaultTwoReplicasRandomRouting(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, stream, "orders.>")
	keys := token.RandomKeyring()
	g1 := gateway(t, natstest.Connect(t, ns), keys, 2*time.Second)
	g2 := gateway(t, natstest.Connect(t, ns), keys, 2*time.Second)
	d := driver(g1, g2)
	d.Answer = randomAnswers
	r := run(t, d, scale(1000, 10000), 4, 3*time.Minute, nil)
	if r.Termed == 0 || r.Redelivered == 0 {
		t.Fatalf("the mix did not exercise terms and redeliveries: %v", r)
	}
}

// answers acks most, and naks, delays, terminates or ignores the rest; a
// message is ignored only while its delivery count is below ignoreBelow, so
// that the run ends in a few ack_waits.
func answers(ignoreBelow uint64) func(*rand.Rand, uint64) Action {
	return func(r *rand.Rand, delivered uint64) Action {
		switch p := r.IntN(100); {
		case p < 55:
			return Ack
		case p < 70:
			return Nak
		case p < 80:
			return NakDelay
		case p < 90:
			return Term
		case delivered < ignoreBelow:
			return NoAnswer
		default:
			return Ack
		}
	}
}

// randomAnswers ignores a message at most once.
var randomAnswers = answers(2)

func TestFaultRandomAnswersMatchConsumerState(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, stream, "orders.>")
	d := driver(gateway(t, nc, token.RandomKeyring(), time.Second))
	d.Answer = randomAnswers
	n := scale(2000, 20000)
	r := run(t, d, n, 4, 3*time.Minute, nil)
	// Settles are confirmed by the server, so its state already agrees.
	ci := consumerInfo(t, nc)
	if ci.NumAckPending != 0 || ci.NumPending != 0 || ci.AckFloor.Stream != uint64(n) {
		t.Fatalf("consumer state: ack pending %d, pending %d, ack floor %d; checker: %v",
			ci.NumAckPending, ci.NumPending, ci.AckFloor.Stream, r)
	}
	if r.Acked+r.Termed != n {
		t.Fatalf("acked %d + termed %d != published %d", r.Acked, r.Termed, n)
	}
}

func TestFaultCallersVanishMidFetch(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, stream, "orders.>")
	const ackWait = 10 * time.Second
	d := driver(gateway(t, nc, token.RandomKeyring(), ackWait))
	d.Expires = time.Second
	d.PublishGap = 2 * time.Millisecond // so that Fetches wait, and are canceled while waiting
	d.CancelFetch = func(r *rand.Rand) bool { return r.IntN(100) < 40 }
	n := scale(1000, 10000)
	run(t, d, n, 8, 3*time.Minute, nil)
	// A message caught by a Fetch canceled while it waited goes to the next
	// Fetch or back to the server, never waiting out ack_wait. What no
	// gateway can see is a caller that goes away after its answer was sent
	// (a lost response): those messages wait out ack_wait, as with any
	// at-least-once service. A cancel lands in that window about once in a
	// few runs of this test, hence a bound rather than zero.
	waited := d.Checker.WaitedAtLeast(ackWait)
	t.Logf("messages that waited out ack_wait: %d of %d", waited, n)
	if waited > n/200 {
		t.Fatalf("%d messages waited out ack_wait: canceled Fetches strand messages", waited)
	}
}

type cluster struct {
	t     *testing.T
	opts  []*natsserver.Options
	nodes []*natsserver.Server
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{t: t}
	natstest.StoresOutliveNodes(t)
	t.Cleanup(func() {
		// A node stopped while it still recovers its streams can leave a
		// stream's store running (nats-server), so the cluster settles first.
		for _, ns := range c.nodes {
			if ns == nil {
				continue
			}
			if err := natstest.Healthy(ns, 30*time.Second); err != nil {
				t.Log(err)
			}
		}
		c.stop()
	})
	// Its ports were free a moment ago: another process may take one before
	// a node binds it, and the cluster is then started on other ports, up
	// to three times.
	var err error
	for range 3 {
		if err = c.startAll(natstest.ClusterOptions(t, 3)); err == nil {
			return c
		}
		t.Logf("the cluster did not start (%v): again, on other ports", err)
		c.stop()
	}
	t.Fatal(err)
	return nil
}

// startAll starts a node of each of opts and waits until all are healthy.
func (c *cluster) startAll(opts []*natsserver.Options) error {
	c.opts, c.nodes = opts, make([]*natsserver.Server, len(opts))
	for i := range c.opts {
		if err := c.start(i); err != nil {
			return err
		}
	}
	for _, ns := range c.nodes {
		if err := natstest.Healthy(ns, time.Minute); err != nil {
			return err
		}
	}
	return nil
}

// stop shuts every node down.
func (c *cluster) stop() {
	for i, ns := range c.nodes {
		if ns != nil {
			ns.Shutdown()
			ns.WaitForShutdown()
			c.nodes[i] = nil
		}
	}
}

// start starts node i and waits until it serves clients.
func (c *cluster) start(i int) error {
	o := *c.opts[i]
	ns, err := natsserver.NewServer(&o)
	if err != nil {
		return err
	}
	c.nodes[i] = ns
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		return fmt.Errorf("node %s did not start", o.ServerName)
	}
	return nil
}

func (c *cluster) urls() string {
	u := ""
	for _, o := range c.opts {
		if u != "" {
			u += ","
		}
		u += fmt.Sprintf("nats://127.0.0.1:%d", o.Port)
	}
	return u
}

// bounce stops the node called name and starts it again after a pause.
func (c *cluster) bounce(ctx context.Context, name string) {
	for i, o := range c.opts {
		if o.ServerName == name {
			c.nodes[i].Shutdown()
			c.nodes[i].WaitForShutdown()
			backoff(ctx, time.Second)
			// Back, and current with its streams and consumers, as an
			// operator's rolling restart waits before the next node.
			err := c.start(i)
			if err == nil {
				err = natstest.Healthy(c.nodes[i], time.Minute)
			}
			if err != nil {
				c.t.Error(err)
			}
			return
		}
	}
}

func TestFaultClusterLeadersKilled(t *testing.T) {
	c := startCluster(t)
	nc, err := nats.Connect(c.urls(), reconnecting()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var s jetstream.Stream
	natstest.Eventually(t, 30*time.Second, "R3 stream created", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{"orders.>"}, Replicas: 3})
		return err == nil
	})
	d := driver(gateway(t, nc, token.RandomKeyring(), 5*time.Second))
	n, rounds := scale(600, 5000), scale(2, 6)
	r := run(t, d, n, 4, 4*time.Minute, func(ctx context.Context) {
		for i := 1; i <= rounds && ctx.Err() == nil; i++ {
			waitPublished(ctx, d.Checker, i*n/(rounds+1))
			ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
			var leader string
			if i%2 == 1 {
				if si, err := s.Info(ictx); err == nil && si.Cluster != nil {
					leader = si.Cluster.Leader
				}
			} else if cons, err := s.Consumer(ictx, consumer); err == nil {
				if ci, err := cons.Info(ictx); err == nil && ci.Cluster != nil {
					leader = ci.Cluster.Leader
				}
			}
			cancel()
			if leader != "" {
				t.Logf("round %d: bouncing leader %s", i, leader)
				c.bounce(ctx, leader)
			}
		}
	})
	assertDrained(t, nc, r)
}
