package push_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/push"
	"github.com/jetgate/jetgate/internal/replica"
)

// y11NATSFailures are the pusher's jetgate_push_nats_failures_total by op, as
// reg has them.
func y11NATSFailures(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "jetgate_push_nats_failures_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "op" {
					out[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// A pusher on a leaf node reaches the hub's JetStream through its link. With
// the link cut its connection stays up and its pulls fail: each counts under
// op="pull" (the pusher pulls again, and no caller would hear of it
// otherwise). While JetStream answers, pushes and acks count nothing.
func TestY11PullsFailingWithTheConnectionUpAreCounted(t *testing.T) {
	hub, leaf, link := natstest.StartHubAndLinkedLeaf(t, "hub", "leaf")
	hc := natstest.Connect(t, hub)
	natstest.Stream(t, hc, stream, "orders.>")
	natstest.Stream(t, hc, "DEAD", "dead.>")
	hjs, err := jetstream.New(hc)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ns: leaf, nc: hc, js: hjs}
	rc := newReceiver(t)
	reg := prometheus.NewRegistry()
	r, _ := e.replica(consumerCfg(), push.Config{URL: rc.URL, Concurrency: 4}, func(o *replica.Options) {
		o.Domain, o.Metrics = "hub", reg
	})
	const n = 20
	for i := range n {
		e.publish("orders.new", fmt.Sprint(i), nil)
	}
	for range n {
		rc.next(t, 10*time.Second)
	}
	e.drained(10 * time.Second)
	if got := y11NATSFailures(t, reg); len(got) != 4 || got["pull"]+got["ack"]+got["nak"]+got["term"] != 0 {
		t.Fatalf("while JetStream answers: %v; want pull, ack, nak and term at 0", got)
	}

	link.Cut()
	natstest.Eventually(t, 10*time.Second, "the link down", func() bool { return hub.NumLeafNodes() == 0 })
	natstest.Eventually(t, 20*time.Second, "the failed pulls counted", func() bool { return y11NATSFailures(t, reg)["pull"] > 0 })
	if leaf.NumClients() == 0 {
		t.Fatal("the pusher's connection went away: the test's premise does not hold")
	}

	link.Mend()
	e.publish("orders.new", "after", nil)
	if p := rc.next(t, 20*time.Second); string(p.body) != "after" {
		t.Fatalf("pushed %q once the link was back", p.body)
	}
	if st := pushState(t, r); !strings.HasPrefix(st.LastError, "pulling: ") {
		t.Fatalf("GetConsumer's push state says nothing of the failed pulls: %+v", st)
	}
}

// An Ack of a push that NATS fails (JetStream disabled on the server while
// the endpoint held the request; the connection stays up) counts under
// op="ack", and is tried again.
func TestY11AcksFailingForNATSAreCounted(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	release := make(chan struct{})
	rc.answerWith(func(_ int, _ pushed, w http.ResponseWriter) {
		<-release
		w.WriteHeader(http.StatusNoContent)
	})
	reg := prometheus.NewRegistry()
	e.replica(consumerCfg(), push.Config{URL: rc.URL}, func(o *replica.Options) { o.Metrics = reg })
	e.publish("orders.new", "a", nil)
	rc.next(t, 5*time.Second)
	e.ns.DisableJetStream()
	close(release)
	natstest.Eventually(t, 10*time.Second, "the failed Ack counted", func() bool { return y11NATSFailures(t, reg)["ack"] > 0 })
	if !e.nc.IsConnected() {
		t.Fatal("the connection went away: the test's premise does not hold")
	}
}
