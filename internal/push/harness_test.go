package push_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/push"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

// Every goroutine a pusher starts must be gone when its tests end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	stream = "ORDERS"
	name   = "shipping"
	dead   = "dead.shipping"
)

// pushed is one request the receiver got.
type pushed struct {
	header http.Header
	body   []byte
	at     time.Time
	ctx    context.Context // the request's: done when jetgate hangs up
}

// receiver is the endpoint: it records every request and answers as the
// test's handler says (204 by default).
type receiver struct {
	*httptest.Server
	got chan pushed

	mu     sync.Mutex
	answer func(n int, p pushed, w http.ResponseWriter) // n: requests so far, this one included
	n      int
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{got: make(chan pushed, 10000)}
	rc.Server = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p := pushed{header: r.Header.Clone(), body: body, at: time.Now(), ctx: r.Context()}
	rc.mu.Lock()
	rc.n++
	n, answer := rc.n, rc.answer
	rc.mu.Unlock()
	rc.got <- p // on arrival: a test sees a push its handler holds
	if answer != nil {
		answer(n, p, w)
	} else {
		w.WriteHeader(http.StatusNoContent)
	}
}

func (rc *receiver) answerWith(f func(n int, p pushed, w http.ResponseWriter)) {
	rc.mu.Lock()
	rc.answer = f
	rc.mu.Unlock()
}

// next is the next request, within d.
func (rc *receiver) next(t *testing.T, d time.Duration) pushed {
	t.Helper()
	select {
	case p := <-rc.got:
		return p
	case <-time.After(d):
		t.Fatalf("no push within %v", d)
		return pushed{}
	}
}

// none fails on any request within d.
func (rc *receiver) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case p := <-rc.got:
		t.Fatalf("an unexpected push: %s %q", p.header.Get("Webhook-Id"), p.body)
	case <-time.After(d):
	}
}

// env is a NATS server with the ORDERS stream and a dead-letter stream.
type env struct {
	t  *testing.T
	ns *natsserver.Server
	nc *nats.Conn
	js jetstream.JetStream
}

func newEnv(t *testing.T) *env { return newEnvOn(t, natstest.Start(t)) }

// newEnvOn is newEnv on ns, its connection made with opts.
func newEnvOn(t *testing.T, ns *natsserver.Server, opts ...nats.Option) *env {
	nc := natstest.Connect(t, ns, opts...)
	natstest.Stream(t, nc, stream, "orders.>")
	natstest.Stream(t, nc, "DEAD", "dead.>")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ns: ns, nc: nc, js: js}
}

// consumerCfg is the pushed consumer: ack_wait 1s unless changed.
func consumerCfg(change ...func(*consumer.Config)) consumer.Config {
	c := consumer.Config{Stream: stream, Name: name, AckWait: time.Second, MaxDeliver: 4,
		DeadLetter: &consumer.DeadLetter{Subject: dead, OnTerm: true}}
	for _, f := range change {
		f(&c)
	}
	return c
}

// replica starts a replica that pushes to url; stop stops it as a shutdown
// does (graceful within a second). change, if any, changes its options.
func (e *env) replica(cc consumer.Config, pc push.Config, change ...func(*replica.Options)) (r *replica.Replica, stop func()) {
	e.t.Helper()
	pc.Stream, pc.Consumer = cc.Stream, cc.Name
	o := replica.Options{
		Conn: natstest.Connect(e.t, e.ns), Consumers: []consumer.Config{cc}, Pushes: []push.Config{pc},
		Keys: keyring, RequestTimeout: 2 * time.Second,
	}
	for _, f := range change {
		f(&o)
	}
	r, err := replica.New(context.Background(), o)
	if err != nil {
		e.t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			r.StopPush(ctx)
			r.Close()
		})
	}
	e.t.Cleanup(stop)
	return r, stop
}

// keyring is shared by the replicas of a test binary.
var keyring = token.RandomKeyring()

func (e *env) publish(subject string, data string, h nats.Header) uint64 {
	e.t.Helper()
	ack, err := e.js.PublishMsg(context.Background(), &nats.Msg{Subject: subject, Data: []byte(data), Header: h})
	if err != nil {
		e.t.Fatal(err)
	}
	return ack.Sequence
}

// info is the consumer's state on the server.
func (e *env) info() *jetstream.ConsumerInfo {
	e.t.Helper()
	c, err := e.js.Consumer(context.Background(), stream, name)
	if err != nil {
		e.t.Fatal(err)
	}
	ci, err := c.Info(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return ci
}

// drained waits until the server holds nothing pending or unacked.
func (e *env) drained(within time.Duration) {
	e.t.Helper()
	natstest.Eventually(e.t, within, "the consumer drained", func() bool {
		ci := e.info()
		return ci.NumPending == 0 && ci.NumAckPending == 0
	})
}

// deadLetters are the messages copied to the dead-letter subject.
func (e *env) deadLetters() []*jetstream.RawStreamMsg {
	return natstest.StreamMsgs(e.t, e.js, "DEAD", dead)
}

// freeAddr is a loopback address nothing listens on a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func seqHeader(p pushed) uint64 {
	n, _ := strconv.ParseUint(p.header.Get("Jetgate-Stream-Seq"), 10, 64)
	return n
}

// writeFile writes text to a file of the test's and returns its path.
func writeFile(t *testing.T, text string) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "push")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}
