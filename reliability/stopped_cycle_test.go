package reliability

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/roster"
	"github.com/jetgate/jetgate/internal/token"
)

// stoppable is the replicas as a load balancer sees them: the callers'
// connections to each, counting the calls in flight, and one replica that
// may be out of the route.
type stoppable struct {
	procs    []*process
	clients  []routes
	inflight []*atomic.Int64
	out      atomic.Int32 // index+1 of the replica out of the route, 0 for none
	routes   atomic.Pointer[routes]
}

// add routes callers to p too, over a connection of their own.
func (s *stoppable) add(t *testing.T, p *process) {
	t.Helper()
	n := new(atomic.Int64)
	conn, err := grpc.NewClient(p.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			n.Add(1)
			defer n.Add(-1)
			return invoker(ctx, method, req, reply, cc, opts...)
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	s.procs = append(s.procs, p)
	s.inflight = append(s.inflight, n)
	s.clients = append(s.clients, routes{pubs: []jetgatev1.StreamServiceClient{jetgatev1.NewStreamServiceClient(conn)},
		cons: []jetgatev1.ConsumerServiceClient{jetgatev1.NewConsumerServiceClient(conn)}})
	s.publish()
}

func (s *stoppable) route() ([]jetgatev1.StreamServiceClient, []jetgatev1.ConsumerServiceClient) {
	r := s.routes.Load()
	return r.pubs, r.cons
}

// setOut takes replica i out of the route (-1: every replica in).
func (s *stoppable) setOut(i int) {
	s.out.Store(int32(i + 1))
	s.publish()
}

func (s *stoppable) publish() {
	r := &routes{}
	for i, c := range s.clients {
		if int(s.out.Load()) != i+1 {
			r.pubs = append(r.pubs, c.pubs...)
			r.cons = append(r.cons, c.cons...)
		}
	}
	s.routes.Store(r)
}

// stopCycle is one stop of a replica, the resets during it, and the stale
// settles of its tokens.
type stopCycle struct {
	t      *testing.T
	set    *stoppable
	victim int
	kv     jetstream.KeyValue
	keys   *token.Keyring
	nc     *nats.Conn
	watch  *stoppedWatch
	chk    *Checker
	stop   time.Duration
	probes *probeTally
}

func (c *stopCycle) run(ctx context.Context, probeN int) {
	t := c.t
	p := c.set.procs[c.victim]
	peer, other := c.set.procs[(c.victim+1)%3], c.set.procs[(c.victim+2)%3]
	taken := c.take(ctx, p, probeN)
	if len(taken) == 0 {
		t.Error("no message fetched through the replica to be stopped")
		return
	}
	claims, err := c.keys.Open(taken[0].GetToken(), stream, consumer, "")
	if err != nil {
		t.Error(err)
		return
	}
	victimID := claims.Issuer.String()
	// With staleOnWake, each kept token is settled once while the replica
	// is stopped, by one of these callers.
	type path struct {
		name   string
		via    *process
		within time.Duration
	}
	paths := []path{{"kept", nil, 0}}
	if staleOnWake {
		paths = []path{{"waited", p, c.stop + 20*time.Second}, {"gave_up_2s", p, 2 * time.Second}, {"forwarded", peer, 3 * time.Second}}
	}
	var groups []probeGroup
	for _, pa := range paths {
		for _, a := range []Action{Ack, Nak, Term} {
			groups = append(groups, probeGroup{path: pa.name, a: a})
		}
	}
	for i, m := range taken {
		g := &groups[i%len(groups)]
		g.msgs = append(g.msgs, m)
		c.watch.label(string(m.GetData()), g.path+" "+g.a.String())
	}
	noticed, err := resetsNoticed(p)
	if err != nil {
		t.Error(err)
		return
	}

	c.set.setOut(c.victim)
	if !staleOnWake {
		// Drained as a load balancer drains a backend: callers get a moment
		// to settle what they fetched through it (a caller holds a batch up
		// to 300ms), and nothing of theirs is in flight to it as it stops.
		backoff(ctx, time.Second)
		if !waitFor(ctx, 10*time.Second, func() bool { return c.set.inflight[c.victim].Load() == 0 }) {
			t.Error("calls to the replica to be stopped still in flight after 10s")
		}
	}
	signal(t, p, syscall.SIGSTOP)
	// The settles below must find it stopped: under load the kernel stops
	// its threads some milliseconds after kill returns, and one still
	// running would serve a settle before the reset, rightly.
	sent := time.Now()
	if err := waitStopped(p.cmd.Process.Pid, 10*time.Second); err != nil {
		t.Error(err)
	}
	stopped := time.Now()
	t.Logf("replica %d: every thread stopped %v after SIGSTOP was sent", c.victim, stopped.Sub(sent).Round(time.Microsecond))
	var waiting sync.WaitGroup
	if staleOnWake {
		for i, g := range groups {
			pa := paths[i/3]
			waiting.Go(func() { c.probes.add(pa.name, g.a, g.settle(ctx, pa.via.cons, pa.within)) })
		}
	}
	// The first reset while the roster still counts the stopped replica;
	// in the long form another once its liveness key has aged out.
	at := []time.Duration{time.Duration(scale(500, 1000)) * time.Millisecond}
	if long {
		at = append(at, 2*roster.TTL)
	}
	for _, a := range at {
		backoff(ctx, time.Until(stopped.Add(a)))
		c.reset(ctx, victimID)
	}
	backoff(ctx, time.Until(stopped.Add(c.stop)))
	signal(t, p, syscall.SIGCONT)
	woke := time.Now()
	if staleOnWake {
		for _, g := range groups {
			c.probes.add("direct_at_wake", g.a, g.settle(ctx, p.cons, 5*time.Second))
		}
	}
	// Once it has noticed the resets, every kept token again, through it
	// and through a peer; then it is routed to again.
	if !waitFor(ctx, 10*time.Second, func() bool { n, err := resetsNoticed(p); return err == nil && n >= noticed+len(at) }) {
		t.Errorf("the woken replica did not notice the %d resets in 10s", len(at))
	}
	seen := time.Since(woke)
	for _, g := range groups {
		c.probes.add("direct_after_notice", g.a, g.settle(ctx, p.cons, 5*time.Second))
		c.probes.add("peer_after_wake", g.a, g.settle(ctx, other.cons, 5*time.Second))
	}
	c.set.setOut(-1)
	waiting.Wait()
	// The held redeliveries stay unanswered a moment more: whatever the
	// woken replica does with what waited for it lands while they are held.
	c.watch.release(time.Now().Add(time.Second))
	t.Logf("replica %d (%s) stopped %v, %d of its tokens kept; it noticed the resets %v after SIGCONT",
		c.victim, victimID, woke.Sub(stopped).Round(time.Millisecond), len(taken), seen.Round(time.Millisecond))
}

func signal(t *testing.T, p *process, sig syscall.Signal) {
	if err := syscall.Kill(p.cmd.Process.Pid, sig); err != nil {
		t.Errorf("signal %v: %v", sig, err)
	}
}

// waitStopped waits until every thread of process pid is stopped (state T
// in /proc), or within passes. Without /proc (not Linux) it cannot tell,
// and returns at once.
func waitStopped(pid int, within time.Duration) error {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		return nil
	}
	dir := fmt.Sprintf("/proc/%d/task", pid)
	deadline := time.Now().Add(within)
	for {
		running, err := runningThreads(dir)
		switch {
		case err != nil:
			return fmt.Errorf("read the threads of process %d: %w", pid, err)
		case running == 0:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("%d threads of process %d still not stopped %v after SIGSTOP", running, pid, within)
		}
		time.Sleep(time.Millisecond) // the kernel offers no wait on another process's stop
	}
}

// runningThreads counts the threads under dir (/proc/<pid>/task) that are
// not stopped. A thread's state follows the command name in its stat file,
// which may itself hold spaces and parentheses: it is read after the last
// ")".
func runningThreads(dir string) (int, error) {
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	running := 0
	for _, task := range tasks {
		stat, err := os.ReadFile(filepath.Join(dir, task.Name(), "stat"))
		if err != nil {
			continue // the thread ended
		}
		end := bytes.LastIndexByte(stat, ')')
		_, rest, ok := bytes.Cut(stat[end+1:], []byte(" "))
		if end < 0 || !ok || len(rest) == 0 {
			return 0, fmt.Errorf("unreadable %s/%s/stat: %q", dir, task.Name(), stat)
		}
		if state := rest[0]; state != 'T' && state != 't' {
			running++
		}
	}
	return running, nil
}

// waitFor polls cond until it holds (true) or within passes (false).
func waitFor(ctx context.Context, within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		backoff(ctx, 20*time.Millisecond)
	}
	return true
}

// take fetches n messages through p for the test to hold, or as many as
// come within a few seconds.
func (c *stopCycle) take(ctx context.Context, p *process, n int) []*jetgatev1.Message {
	var got []*jetgatev1.Message
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < n && ctx.Err() == nil && time.Now().Before(deadline) {
		fctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		resp, err := p.cons.Fetch(fctx, &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer,
			Batch: int32(n - len(got)), Expires: durationpb.New(time.Second)})
		cancel()
		if err != nil {
			continue
		}
		for _, m := range resp.GetMessages() {
			c.chk.Delivered(string(m.GetData()), time.Now())
		}
		got = append(got, resp.GetMessages()...)
	}
	c.watch.probe(got)
	return got
}

// reset resets the consumer to its ack floor, as `nats consumer reset`
// does, noting whether the stopped replica's liveness key was still there.
func (c *stopCycle) reset(ctx context.Context, victimID string) {
	_, err := c.kv.Get(ctx, "live."+victimID)
	i, before := c.watch.resetting(err == nil)
	if before < 200 {
		c.t.Errorf("a reset after only %d deliveries: too few to tell the deliveries after it", before)
	}
	m, err := c.nc.Request("$JS.API.CONSUMER.RESET."+stream+"."+consumer, nil, 5*time.Second)
	c.watch.answered(i, time.Now())
	if err != nil || m.Header.Get("Status") != "" || len(m.Data) == 0 {
		c.t.Errorf("reset: %v", err)
	}
}

// resetsNoticed reads jetgate_consumer_resets_total of p's consumer.
func resetsNoticed(p *process) (int, error) {
	f, err := metricOf(p, "jetgate_consumer_resets_total{", `stream="`+stream+`"`, `consumer="`+consumer+`"`)
	return int(f), err
}

// metricOf reads the value of the first series on p's /metrics that starts
// with prefix (a name, with "{" for one with labels) and holds every one of
// labels; 0 when there is none.
func metricOf(p *process, prefix string, labels ...string) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.httpAddr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) || !allIn(line, labels) {
			continue
		}
		return strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
	}
	return 0, sc.Err()
}

func allIn(line string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(line, p) {
			return false
		}
	}
	return true
}

type probeGroup struct {
	path string
	a    Action
	msgs []*jetgatev1.Message
}

// settle sends g's settle of its tokens through cl and returns each
// token's outcome: OK, the failure's reason, or the RPC's error code.
func (g probeGroup) settle(ctx context.Context, cl jetgatev1.ConsumerServiceClient, within time.Duration) []string {
	if len(g.msgs) == 0 {
		return nil
	}
	tokens := make([]string, len(g.msgs))
	for i, m := range g.msgs {
		tokens[i] = m.GetToken()
	}
	sctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	fails, err := call(sctx, cl, stream, consumer, g.a, tokens)
	out := make([]string, len(tokens))
	for i := range out {
		out[i] = "OK"
		if err != nil {
			out[i] = "rpc " + status.Code(err).String()
		}
	}
	for _, f := range fails {
		out[f.GetIndex()] = f.GetReason()
	}
	return out
}

// probeTally counts the outcomes of the stale settles, per token.
type probeTally struct {
	mu sync.Mutex
	m  map[string]int
}

func (p *probeTally) add(phase string, a Action, outcomes []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = make(map[string]int)
	}
	for _, o := range outcomes {
		p.m[phase+" "+a.String()+" "+o]++
	}
}

func (p *probeTally) counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.m))
	for k, v := range p.m {
		out[k] = v
	}
	return out
}

func (p *probeTally) total() int { return sumCounts(p.counts(), "") }

// applied counts the stale settles that succeeded.
func (p *probeTally) applied() int {
	n := 0
	for k, v := range p.counts() {
		if strings.HasSuffix(k, " OK") {
			n += v
		}
	}
	return n
}

// members is the roster's bucket.
func members(t *testing.T, nc *nats.Conn) jetstream.KeyValue {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var kv jetstream.KeyValue
	if !waitFor(context.Background(), 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		kv, err = js.KeyValue(ctx, roster.Bucket)
		return err == nil
	}) {
		t.Fatalf("the roster's bucket: %v", err)
	}
	return kv
}

// liveCount counts the replicas whose liveness key is there.
func liveCount(kv jetstream.KeyValue) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	l, err := kv.ListKeysFiltered(ctx, "live.>")
	if err != nil {
		return 0
	}
	n := 0
	for range l.Keys() {
		n++
	}
	return n
}

func formatResumes(rs []resume) string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteString(", ")
		}
		on := "aged out of the roster"
		if r.counted {
			on = "on the roster"
		}
		fmt.Fprintf(&b, "%v (stopped replica %s)", r.after.Round(time.Millisecond), on)
	}
	return b.String()
}
