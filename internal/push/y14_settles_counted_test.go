package push_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/push"
	"github.com/jetgate/jetgate/internal/replica"
)

// y14Settles are the consumer's jetgate_settles_total by "op result", as
// reg has them.
func y14Settles(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "jetgate_settles_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			out[l["op"]+" "+l["result"]] = m.GetCounter().GetValue()
		}
	}
	return out
}

// A pusher's Acks and Terms are tokens settled like a caller's: they count
// in jetgate_settles_total by op and result, each once.
func TestY14APushersSettlesAreCounted(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	rc.answerWith(func(_ int, p pushed, w http.ResponseWriter) {
		if string(p.body) == "bad" {
			w.WriteHeader(http.StatusUnprocessableEntity) // final: Term
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	reg := prometheus.NewRegistry()
	e.replica(consumerCfg(), push.Config{URL: rc.URL, Concurrency: 2}, func(o *replica.Options) { o.Metrics = reg })
	const acked = 5
	for i := range acked {
		e.publish("orders.new", fmt.Sprint(i), nil)
	}
	e.publish("orders.new", "bad", nil)
	for range acked + 1 {
		rc.next(t, 5*time.Second)
	}
	e.drained(10 * time.Second)
	natstest.Eventually(t, 5*time.Second, "the settles counted", func() bool {
		got := y14Settles(t, reg)
		return got["ACK OK"] >= acked && got["TERM OK"] >= 1
	})
	got := y14Settles(t, reg)
	if got["ACK OK"] != acked || got["TERM OK"] != 1 || got["NAK OK"] != 0 {
		t.Fatalf("jetgate_settles_total %v; want ACK OK %d, TERM OK 1, NAK OK 0", got, acked)
	}
}
