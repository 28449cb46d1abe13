package app

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/natstest"
)

// lockedBuffer is a log sink the test reads while jetgate writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitingRun is a jetgate started by runWaiting: its NATS URL names a port
// where nothing listens yet.
type waitingRun struct {
	natsPort int
	http     string // base URL of the REST listener
	log      *lockedBuffer
	started  chan Addrs
	ended    chan struct{} // closed once Run has returned err
	err      error
	cancel   context.CancelFunc
}

// runWaiting runs jetgate against a NATS URL where nothing listens (a port
// free a moment ago), with a consumer of stream ORDERS that it creates.
// set changes the options before the run. The run is cancelled at the end
// of the test, and must end within 10s.
func runWaiting(t *testing.T, set func(*Options)) *waitingRun {
	t.Helper()
	w := &waitingRun{natsPort: natstest.FreePort(t), log: &lockedBuffer{}, started: make(chan Addrs, 1), ended: make(chan struct{})}
	o := testOptions(t)
	o.NATSURL, o.NATSListen = fmt.Sprintf("nats://127.0.0.1:%d", w.natsPort), ""
	o.StreamSubjects = []string{"orders.>"}
	o.HTTPAddr = fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
	o.Logger = slog.New(slog.NewTextHandler(w.log, nil))
	o.Started = func(a Addrs) { w.started <- a }
	if set != nil {
		set(&o)
	}
	w.http = "http://" + o.HTTPAddr
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go func() {
		w.err = Run(ctx, o)
		close(w.ended)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-w.ended:
		case <-time.After(10 * time.Second):
			t.Error("jetgate did not stop within 10s of its cancel")
		}
	})
	return w
}

// probeGet answers GET url: its status and body, 0 when nothing answers.
func probeGet(url string) (int, string) {
	c := http.Client{Timeout: 2 * time.Second}
	r, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, string(b)
}

// untilProbe waits until path answers code, failing the test at once if
// jetgate stops meanwhile.
func (w *waitingRun) untilProbe(t *testing.T, path string, code int, within time.Duration) string {
	t.Helper()
	var body string
	natstest.Eventually(t, within, fmt.Sprintf("%s answers %d", path, code), func() bool {
		select {
		case <-w.ended:
			t.Fatalf("jetgate stopped while waiting for NATS: %v\nlog:\n%s", w.err, w.log)
		default:
		}
		var got int
		got, body = probeGet(w.http + path)
		return got == code
	})
	return body
}

// untilLogged waits until the log holds s, failing the test at once if
// jetgate stops meanwhile.
func (w *waitingRun) untilLogged(t *testing.T, s string, within time.Duration) {
	t.Helper()
	natstest.Eventually(t, within, fmt.Sprintf("the log says %q", s), func() bool {
		select {
		case <-w.ended:
			t.Fatalf("jetgate stopped while waiting for NATS: %v\nlog:\n%s", w.err, w.log)
		default:
		}
		return strings.Contains(w.log.String(), s)
	})
}

// A jetgate started before NATS can be reached, then before JetStream is
// on, stays up: alive (/healthz 200), not ready (/readyz 503, saying what
// it waits for), and trying again; once a JetStream server takes the port
// it creates its stream and consumer, becomes ready and serves a Fetch.
// Before the mend it stopped at once with "no servers available", which an
// orchestrator restarts with a back-off of up to 5 minutes.
func TestY3StartWaitsForNATSAndJetStream(t *testing.T) {
	w := runWaiting(t, nil)
	w.untilProbe(t, "/healthz", http.StatusOK, 10*time.Second)
	if code, body := probeGet(w.http + "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "waiting for NATS") {
		t.Fatalf("/readyz while NATS is unreachable: %d %s; want 503 saying it waits for NATS", code, body)
	}
	w.untilLogged(t, "no servers available", 10*time.Second)

	// NATS without JetStream: connected, but nothing to bind yet.
	plain, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: w.natsPort, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	plain.Start()
	if !plain.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS without JetStream did not start")
	}
	w.untilLogged(t, "step=bootstrap", 15*time.Second)
	if code, body := probeGet(w.http + "/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz while JetStream is off: %d %s; want 503", code, body)
	}
	plain.Shutdown()
	plain.WaitForShutdown()

	natstest.StartIn(t, t.TempDir(), w.natsPort)
	var a Addrs
	select {
	case a = <-w.started:
	case <-w.ended:
		t.Fatalf("jetgate stopped instead of serving: %v\nlog:\n%s", w.err, w.log)
	case <-time.After(30 * time.Second):
		t.Fatalf("jetgate did not serve within 30s of JetStream starting\nlog:\n%s", w.log)
	}
	w.untilProbe(t, "/readyz", http.StatusOK, 10*time.Second)
	cc, sc := grpcClients(t, a.GRPC)
	seq := publish(t, sc, "orders.late", "after the wait")
	msgs := fetch(t, cc, "billing", 1, 5*time.Second)
	if len(msgs) != 1 || msgs[0].GetMetadata().GetStreamSeq() != seq {
		t.Fatalf("fetched %v; want the message of seq %d", msgs, seq)
	}
}

// A stop while jetgate waits for NATS ends it at once, cleanly.
func TestY3StopWhileWaitingForNATS(t *testing.T) {
	w := runWaiting(t, nil)
	w.untilProbe(t, "/healthz", http.StatusOK, 10*time.Second)
	w.untilLogged(t, "no servers available", 10*time.Second)
	w.cancel()
	select {
	case <-w.ended:
		if w.err != nil {
			t.Fatalf("Run returned %v after a stop while waiting; want nil", w.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of a stop while waiting for NATS")
	}
	if code, _ := probeGet(w.http + "/healthz"); code != 0 {
		t.Fatalf("/healthz answers %d after the stop; want the listener closed", code)
	}
}

// A refusal by the server, once it is reached after a wait, still stops
// start-up with the message naming stream, consumer and field (DESIGN
// section 4): an existing consumer whose deliver policy differs, and a
// stream the server will not create.
func TestY3RefusalAfterTheWaitStopsStartUp(t *testing.T) {
	for name, tc := range map[string]struct {
		seed func(ctx context.Context, js jetstream.JetStream) error
		want []string
	}{
		"deliver policy differs": {func(ctx context.Context, js jetstream.JetStream) error {
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
				return err
			}
			_, err := js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{
				Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverNewPolicy,
			})
			return err
		}, []string{`"ORDERS"`, `"billing"`, "deliver policy", "--deliver-policy"}},
		"stream refused": {func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"orders.>"}})
			return err
		}, []string{`"ORDERS"`, "--stream-subjects", "overlap"}},
	} {
		t.Run(name, func(t *testing.T) {
			store := t.TempDir()
			seed := natstest.StartIn(t, store, -1)
			js, err := jetstream.New(natstest.Connect(t, seed))
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.seed(ctxT(t), js); err != nil {
				t.Fatal(err)
			}
			seed.Shutdown()
			seed.WaitForShutdown()

			w := runWaiting(t, nil) // ORDERS on orders.>, billing delivering all
			w.untilLogged(t, "no servers available", 10*time.Second)
			natstest.StartIn(t, store, w.natsPort)
			select {
			case <-w.ended:
				if w.err == nil {
					t.Fatal("Run returned nil; want the refusal")
				}
				for _, want := range tc.want {
					if !strings.Contains(w.err.Error(), want) {
						t.Errorf("error %q does not name %s", w.err, want)
					}
				}
			case <-w.started:
				t.Fatal("jetgate served what the server refuses")
			case <-time.After(30 * time.Second):
				t.Fatalf("jetgate did not stop within 30s of NATS starting\nlog:\n%s", w.log)
			}
		})
	}
}

// A jetgate started against one node of a three-node cluster, which has no
// JetStream meta leader until a second node joins, waits for the leader
// and then serves.
func TestY3StartWaitsForAJetStreamMetaLeader(t *testing.T) {
	natstest.StoresOutliveNodes(t)
	opts := natstest.ClusterOptions(t, 3)
	var nodes []*natsserver.Server
	t.Cleanup(func() {
		for _, ns := range nodes {
			ns.Shutdown()
			ns.WaitForShutdown()
		}
	})
	startNode := func(o *natsserver.Options) {
		ns, err := natsserver.NewServer(o)
		if err != nil {
			t.Fatal(err)
		}
		ns.Start()
		nodes = append(nodes, ns)
		if !ns.ReadyForConnections(10 * time.Second) {
			t.Fatalf("node %s did not start", o.ServerName)
		}
	}
	startNode(opts[0])
	w := runWaiting(t, func(o *Options) { o.NATSURL = fmt.Sprintf("nats://127.0.0.1:%d", opts[0].Port) })
	w.untilLogged(t, "step=bootstrap", 30*time.Second)
	if code, body := probeGet(w.http + "/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz with no meta leader: %d %s; want 503", code, body)
	}
	startNode(opts[1])
	startNode(opts[2])
	select {
	case <-w.started:
	case <-w.ended:
		t.Fatalf("jetgate stopped instead of serving: %v\nlog:\n%s", w.err, w.log)
	case <-time.After(60 * time.Second):
		t.Fatalf("jetgate did not serve within 60s of the cluster forming\nlog:\n%s", w.log)
	}
	w.untilProbe(t, "/readyz", http.StatusOK, 10*time.Second)
}
