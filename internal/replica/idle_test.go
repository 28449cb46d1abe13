package replica_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/push"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

// requests counts what the NATS server hears from jetgate's replicas on the
// JetStream API and the KV buckets, by subject less its stream and
// consumer names.
type requests struct {
	mu    sync.Mutex
	kinds map[string]int
}

func countRequests(t *testing.T, ns *server.Server) *requests {
	t.Helper()
	nc := natstest.Connect(t, ns)
	rq := &requests{kinds: make(map[string]int)}
	for _, subject := range []string{"$JS.API.>", "$KV.>"} {
		if _, err := nc.Subscribe(subject, func(m *nats.Msg) {
			kind := m.Subject
			if strings.HasPrefix(kind, "$JS.API.") {
				tokens := strings.Split(kind, ".")
				kind = strings.Join(tokens[:min(len(tokens), 4)], ".")
			} else {
				kind = strings.Join(strings.Split(kind, ".")[:2], ".")
			}
			rq.mu.Lock()
			rq.kinds[kind]++
			rq.mu.Unlock()
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return rq
}

// during counts the requests heard over d.
func (rq *requests) during(d time.Duration) (total int, kinds map[string]int) {
	rq.mu.Lock()
	rq.kinds = make(map[string]int)
	rq.mu.Unlock()
	<-time.After(d) // a window to count in, not a wait for a condition
	rq.mu.Lock()
	defer rq.mu.Unlock()
	for _, n := range rq.kinds {
		total += n
	}
	return total, rq.kinds
}

func replicaOf(t *testing.T, ns *server.Server, keys *token.Keyring, o replica.Options) *replica.Replica {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o.Conn, o.Keys = natstest.Connect(t, ns), keys
	r, err := replica.New(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// Two replicas serving 300 consumers that nobody calls send the NATS server
// next to nothing: no per-consumer roster keys, infos or tickers (DESIGN
// section 13: at most 5 requests a second, whatever the number of
// consumers).
func TestIdleReplicasOfManyConsumersAskAlmostNothing(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	var cs []consumer.Config
	for i := range 300 {
		cs = append(cs, consumer.Config{Stream: "ORDERS", Name: fmt.Sprintf("c%d", i)})
	}
	keys := token.RandomKeyring()
	start := time.Now()
	a := replicaOf(t, ns, keys, replica.Options{Consumers: cs})
	t.Logf("the first replica bound 300 consumers in %v", time.Since(start))
	start = time.Now()
	replicaOf(t, ns, keys, replica.Options{Consumers: cs})
	t.Logf("the second replica bound them in %v", time.Since(start))
	natstest.Eventually(t, 10*time.Second, "the replicas see each other", func() bool {
		u, err := a.Pulls("ORDERS", "c299")
		return err == nil && u.Replicas == 2
	})
	rq := countRequests(t, ns)
	const window = 4 * time.Second
	total, kinds := rq.during(window)
	t.Logf("2 idle replicas of 300 consumers, %v: %d requests %v", window, total, kinds)
	if perSecond := float64(total) / window.Seconds(); perSecond > 5 {
		t.Fatalf("%.1f requests a second from idle replicas (%v); want at most 5", perSecond, kinds)
	}
}

// Push consumers whose stream has nothing to push ask almost nothing too
// (a reviewer's finding: each pusher pulled every second and asked an
// info every 10s, 20 consumers about 20 requests a second): an idle
// pusher's pull waits 30s, as a nats.go client's does; paused, the same.
// Then a message is still pushed at once.
func TestIdlePushConsumersAskAlmostNothing(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	pushed := make(chan string, 10)
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pushed <- r.Header.Get("Jetgate-Consumer")
	}))
	t.Cleanup(endpoint.Close)
	var cs []consumer.Config
	var ps []push.Config
	for i := range 20 {
		name := fmt.Sprintf("c%d", i)
		cs = append(cs, consumer.Config{Stream: "ORDERS", Name: name, FilterSubjects: []string{"orders." + name}})
		ps = append(ps, push.Config{Stream: "ORDERS", Consumer: name, URL: endpoint.URL})
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	replicaOf(t, ns, token.RandomKeyring(), replica.Options{Consumers: cs, Pushes: ps})
	rq := countRequests(t, ns)
	natstest.Eventually(t, 20*time.Second, "every pusher's pull waiting", func() bool {
		for i := range 20 {
			c, err := js.Consumer(context.Background(), "ORDERS", fmt.Sprintf("c%d", i))
			if err != nil || c.CachedInfo().NumWaiting == 0 {
				return false
			}
		}
		return true
	})
	const window = 4 * time.Second
	total, kinds := rq.during(window)
	t.Logf("a replica of 20 idle push consumers, %v: %d requests %v", window, total, kinds)
	if perSecond := float64(total) / window.Seconds(); perSecond > 2 {
		t.Fatalf("%.1f requests a second from a replica of 20 idle push consumers (%v); want at most 2", perSecond, kinds)
	}
	if _, err := js.Publish(context.Background(), "orders.c7", []byte("m")); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-pushed:
		if c != "c7" {
			t.Fatalf("pushed for %q, want c7", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a message published to an idle push consumer was not pushed within 5s")
	}
}

// Replicas holding leases while nobody calls ask no consumer info: what the
// server says of a consumer is asked only while a caller waits on it.
func TestReplicasHoldingLeasesAskNoInfo(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cs := []consumer.Config{{Stream: "ORDERS", Name: "billing", AckWait: time.Minute}}
	keys := token.RandomKeyring()
	a := replicaOf(t, ns, keys, replica.Options{Consumers: cs})
	b := replicaOf(t, ns, keys, replica.Options{Consumers: cs})
	for i := range 5 {
		if _, err := js.Publish(context.Background(), "orders.x", fmt.Appendf(nil, "m%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	held := 0
	for _, r := range []*replica.Replica{a, b, a, b, a} {
		res, err := r.Fetch(context.Background(), "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		held += len(res.Messages)
	}
	if held != 5 {
		t.Fatalf("leased %d of 5", held)
	}
	rq := countRequests(t, ns)
	total, kinds := rq.during(3 * time.Second)
	t.Logf("2 replicas holding 5 leases, nobody calling, 3s: %d requests %v", total, kinds)
	if n := kinds["$JS.API.CONSUMER.INFO"]; n > 0 {
		t.Fatalf("%d consumer infos asked while nobody called (%v); want none", n, kinds)
	}
}

// seriesOf is the series of name with a label of value label in reg; nil
// when there is none.
func seriesOf(t *testing.T, reg *prometheus.Registry, name, label string) *dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if mf.GetName() == name && l.GetValue() == label {
					return m
				}
			}
		}
	}
	return nil
}

// hasSeries says whether reg has a series of name with a label of value
// label.
func hasSeries(t *testing.T, reg *prometheus.Registry, name, label string) bool {
	t.Helper()
	return seriesOf(t, reg, name, label) != nil
}

// gaugeOf is the gauge of name with a label of value label in reg.
func gaugeOf(t *testing.T, reg *prometheus.Registry, name, label string) prometheus.Gauge {
	t.Helper()
	m := seriesOf(t, reg, name, label)
	if m == nil {
		t.Fatalf("no %s{%s}", name, label)
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "found"})
	g.Set(m.GetGauge().GetValue())
	return g
}
