package reliability

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

// TestFaultRollingRestart restarts the replicas of one durable consumer one
// at a time while traffic flows. Three replicas share a keyring, each on a
// NATS connection of its own; every Fetch and every settle goes to a random
// live replica, so most settles are forwarded, and a settle of a lease whose
// issuer has been stopped is acted on from its token alone. Callers retry:
// a settle that fails for want of a replica or of NATS is sent again
// through another one, and a fifth of all answers is sent twice, the second
// time through another replica a moment later, as by a caller whose
// response was lost. A caller that nak'ed also sometimes sends a stale Ack
// of the same token, which must be refused. Callers work on each batch for
// a while before answering, so that the redelivery of a nak'ed message is
// still held, unanswered, when a retry of the old token arrives.
//
// These are the settles that used to land on someone else's delivery: a
// retried Nak of an old token naking the redelivery another caller holds, a
// stale Ack acking it. Besides the checker's verdict, a stale settle that
// succeeds fails the test, and a watch of the deliveries catches the first
// directly: a message must not come back while the caller holding it has
// neither nak'ed it nor seen its lease end.
func TestFaultRollingRestart(t *testing.T) {
	const ackWait = 3 * time.Second
	n, rounds := scale(1500, 10000), scale(5, 15)

	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, stream, "orders.>")
	set := &replicaSet{ns: ns, keys: token.RandomKeyring(), ackWait: ackWait}
	for range 3 {
		set.add(t)
	}

	// A retried Nak, sent at most 1.5s after the first, lands more than a
	// second before the lease of the redelivery ends; the tolerance keeps a
	// slow machine's delays (the gateway ends a lease only 300ms before the
	// server redelivers) from passing for one.
	watch := &leaseWatch{tolerance: time.Second, keys: set.keys, isGone: set.isGone,
		held: make(map[string]*heldLease), goneIssuer: make(map[Action]int), overtaken: make(map[Action]int)}
	d := &Driver{Stream: stream, Consumer: consumer, Checker: NewChecker(), Batch: 50,
		Expires: 500 * time.Millisecond, RPCTimeout: 2 * time.Second, Quiesce: 2*ackWait + time.Second,
		PublishGap: time.Duration(scale(4, 2)) * time.Millisecond,
		Route:      set.route, Answer: rollingAnswers, Watch: watch,
		// Callers work on a batch a while before answering: a stale settle
		// finds the redelivery held, not answered already.
		Hold: func(r *rand.Rand) time.Duration { return time.Duration(r.Int64N(int64(1200 * time.Millisecond))) },
		Resend: func(r *rand.Rand, a Action) (Action, time.Duration, bool) {
			after := time.Duration(r.Int64N(int64(1500 * time.Millisecond)))
			switch p := r.IntN(100); {
			case p < 20: // the response was lost: the same settle again
				return a, after, true
			case p < 40 && (a == Nak || a == NakDelay): // a stale Ack of what was nak'ed
				return Ack, after, true
			}
			return 0, 0, false
		},
	}

	start := time.Now()
	var bg sync.WaitGroup
	defer bg.Wait() // after cancel, below
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(scale(2, 8))*time.Minute)
	defer cancel()
	published := make(chan struct{})
	pubErr := make(chan error, 1)
	consumed := make(chan error, 1)
	bg.Go(func() {
		defer close(published)
		pubErr <- d.Publish(ctx, t.Name(), n)
	})
	bg.Go(func() { consumed <- d.Consume(ctx, 6, published) })

	// The rolling restart, one replica at a time, spread over publishing.
	restarts := 0
	for i := 1; i <= rounds; i++ {
		waitPublished(ctx, d.Checker, i*n/(rounds+1))
		if ctx.Err() != nil {
			break
		}
		set.restart(t, (i-1)%3)
		restarts++
	}
	err := <-consumed
	<-published
	if perr := <-pubErr; err == nil {
		err = perr
	}
	took := time.Since(start)

	r := d.Checker.Report()
	st := d.Stats()
	fw := set.forwards()
	t.Logf("%s: %d restarts in %v; %v", t.Name(), restarts, took.Round(time.Millisecond), r)
	t.Logf("rpc errors %v, slowest failed rpc %v, longest stall %v", st.Errors, st.SlowestError, st.LongestStall)
	t.Logf("forwarded settle batches: %v", fw)
	t.Logf("settle outcomes per token: %s", formatCounts(st.Outcomes))
	t.Logf("deliveries after a lease ended: %d, the earliest %v after its deadline (tolerance %v)",
		watch.expired, watch.minSlack.Round(time.Millisecond), watch.tolerance)
	// A Fetch cut short by a stop may leave messages leased to nobody until
	// ack_wait (a response lost, or a pull still open when the replica
	// closed): first deliveries that late.
	t.Logf("messages first handed out %v or more after their publish: %d", ackWait-time.Second, d.Checker.WaitedAtLeast(ackWait-time.Second))
	goneIssuer, overtaken := watch.gone()
	t.Logf("settles sent (per token) for a lease whose issuer was stopped: %v; of them, with a newer delivery of the message already handed out: %v",
		goneIssuer, overtaken)
	if err != nil {
		t.Fatal(err)
	}
	if restarts != rounds {
		t.Fatalf("%d restarts of %d", restarts, rounds)
	}
	if r.Lost != 0 || r.Unexpected != 0 || r.DupAfterAck != 0 {
		t.Fatalf("lost %d, unexpected %d, dup_after_ack %d", r.Lost, r.Unexpected, r.DupAfterAck)
	}
	if len(st.StaleAccepted) > 0 {
		t.Fatalf("%d stale settles were accepted, first: %s", len(st.StaleAccepted), st.StaleAccepted[0])
	}
	if early := watch.violations(); len(early) > 0 {
		t.Fatalf("%d messages came back while their holder's lease was live (a stale settle landed on it), first: %s",
			len(early), early[0])
	}
	// The scenario did what it is for: settles of leases whose issuer was
	// gone, retries, stale settles, terms and redeliveries.
	if fw["issuer_gone"] == 0 || len(goneIssuer) == 0 || r.Termed == 0 || r.Redelivered == 0 ||
		sumCounts(st.Outcomes, "resend ") == 0 || sumCounts(st.Outcomes, "stale ") == 0 {
		t.Fatalf("the run did not exercise what it is for: forwards %v, %v, outcomes %v", fw, r, st.Outcomes)
	}
	assertDrained(t, nc, r)
}

// rollingAnswers is the mix of randomAnswers, except that a redelivery
// too may go unanswered once: one held until its lease ends is what a stale
// settle would hit.
var rollingAnswers = answers(3)

// replicaSet is the replicas of the deployment as a load balancer sees
// them: the live ones, swapped one at a time.
type replicaSet struct {
	ns      *server.Server
	keys    *token.Keyring
	ackWait time.Duration

	slots  []*liveReplica         // only the test goroutine touches slots
	routes atomic.Pointer[routes] // what the driver calls, rebuilt from slots
	regs   []*prometheus.Registry // every replica's metrics, stopped ones too
	gone   sync.Map               // token.IssuerID of each stopped replica
}

type liveReplica struct {
	g  *gwtest.Replica
	nc *nats.Conn
}

type routes struct {
	pubs []jetgatev1.StreamServiceClient
	cons []jetgatev1.ConsumerServiceClient
}

// route is Driver.Route.
func (s *replicaSet) route() ([]jetgatev1.StreamServiceClient, []jetgatev1.ConsumerServiceClient) {
	r := s.routes.Load()
	return r.pubs, r.cons
}

func (s *replicaSet) add(t *testing.T) {
	s.slots = append(s.slots, s.start(t))
	s.publish()
}

// start runs a fresh replica (a new issuer id, the same keys) on a NATS
// connection of its own.
func (s *replicaSet) start(t *testing.T) *liveReplica {
	t.Helper()
	nc := natstest.Connect(t, s.ns)
	reg := prometheus.NewRegistry()
	s.regs = append(s.regs, reg)
	g := gwtest.Start(t, replica.Options{
		Conn:           nc,
		Consumers:      []coreconsumer.Config{{Stream: stream, Name: consumer, AckWait: s.ackWait, MaxAckPending: 1024}},
		Keys:           s.keys,
		RequestTimeout: time.Second,
		Metrics:        reg,
		Logger:         testLogger(t),
	})
	return &liveReplica{g: g, nc: nc}
}

// restart stops replica i (its leases' issuer is gone) and closes its
// connection, then starts a fresh one and routes to it in place of the old.
// Until then calls routed to the old one fail, as they do before a load
// balancer notices, and callers retry them through another.
func (s *replicaSet) restart(t *testing.T, i int) {
	t.Helper()
	old := s.slots[i]
	old.g.Stop()
	old.nc.Close()
	s.gone.Store(old.g.ID(), true)
	s.slots[i] = s.start(t)
	s.publish()
}

// isGone reports whether the replica with id has been stopped.
func (s *replicaSet) isGone(id token.IssuerID) bool {
	_, ok := s.gone.Load(id)
	return ok
}

func (s *replicaSet) publish() {
	r := &routes{}
	for _, l := range s.slots {
		if l != nil {
			r.pubs = append(r.pubs, l.g.Streams)
			r.cons = append(r.cons, l.g.Consumers)
		}
	}
	s.routes.Store(r)
}

// forwards sums jetgate_forwards_total by result over every replica.
func (s *replicaSet) forwards() map[string]float64 {
	out := make(map[string]float64)
	for _, reg := range s.regs {
		mfs, err := reg.Gather()
		if err != nil {
			continue
		}
		for _, mf := range mfs {
			if mf.GetName() != "jetgate_forwards_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "result" {
						out[l.GetValue()] += m.GetCounter().GetValue()
					}
				}
			}
		}
	}
	return out
}

// leaseWatch follows the latest delivery of each message that a caller was
// handed. A newer delivery may come only once the holder of the latest has
// nak'ed it (a Nak was sent) or its lease has ended (its deadline, which
// the gateway sets a margin before the server's redelivery). One that comes
// earlier means the server redelivered a message that a caller still held:
// a stale settle of an older delivery landed on it.
//
// It also counts the settles it sees sent for leases whose issuer was
// stopped (they are acted on from the token alone), and among them those
// of a delivery that a newer one had already replaced: the settles that a
// gateway must not let land on the newer one.
type leaseWatch struct {
	tolerance time.Duration
	keys      *token.Keyring
	isGone    func(token.IssuerID) bool

	mu         sync.Mutex
	held       map[string]*heldLease // by message id
	early      []string
	expired    int           // newer deliveries after a deadline, with no Nak
	minSlack   time.Duration // the least time after a deadline one came
	goneIssuer map[Action]int
	overtaken  map[Action]int
}

type heldLease struct {
	delivered uint64
	deadline  time.Time
	seen      time.Time
	naked     bool
}

func (w *leaseWatch) Delivered(m *jetgatev1.Message, at time.Time) {
	id, n := string(m.GetData()), m.GetMetadata().GetNumDelivered()
	w.mu.Lock()
	defer w.mu.Unlock()
	h, ok := w.held[id]
	if ok && n <= h.delivered {
		return // an older delivery, seen late
	}
	if ok && !h.naked {
		switch slack := at.Sub(h.deadline); {
		case slack < -w.tolerance:
			w.early = append(w.early, fmt.Sprintf("%s (stream_seq %d): delivery %d came %v after delivery %d, %v before that lease's deadline, and no Nak of it was sent",
				id, m.GetMetadata().GetStreamSeq(), n, at.Sub(h.seen).Round(time.Millisecond), h.delivered, (-slack).Round(time.Millisecond)))
		case w.expired == 0 || slack < w.minSlack:
			w.minSlack = slack
			fallthrough
		default:
			w.expired++
		}
	}
	w.held[id] = &heldLease{delivered: n, deadline: m.GetLeaseDeadline().AsTime(), seen: at}
}

func (w *leaseWatch) Settling(a Action, ms []*jetgatev1.Message) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range ms {
		h, n := w.held[string(m.GetData())], m.GetMetadata().GetNumDelivered()
		if h != nil && h.delivered == n && (a == Nak || a == NakDelay) {
			h.naked = true
		}
		if c, err := w.keys.Open(m.GetToken(), stream, consumer, ""); err == nil && w.isGone(c.Issuer) {
			w.goneIssuer[a]++
			if h != nil && h.delivered > n {
				w.overtaken[a]++
			}
		}
	}
}

func (w *leaseWatch) gone() (goneIssuer, overtaken map[Action]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.goneIssuer), maps.Clone(w.overtaken)
}

func (w *leaseWatch) violations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.early...)
}

func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%d", k, m[k])
	}
	return b.String()
}

func sumCounts(m map[string]int, prefix string) int {
	n := 0
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}
