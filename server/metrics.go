package server

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the gateway's Prometheus metrics. The lease table is the
// source of the lease gauges.
type metrics struct {
	fetched  *prometheus.CounterVec
	empty    *prometheus.CounterVec
	settles  *prometheus.CounterVec
	orphans  *prometheus.CounterVec
	forwards *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := func(c *prometheus.CounterVec) *prometheus.CounterVec {
		reg.MustRegister(c)
		return c
	}
	return &metrics{
		fetched: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetgate_fetched_messages_total",
			Help: "Messages leased by Fetch.",
		}, []string{"stream", "consumer"})),
		empty: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetgate_fetch_empty_total",
			Help: "Fetches that returned no message, by reason.",
		}, []string{"stream", "consumer", "reason"})),
		settles: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetgate_settles_total",
			Help: "Tokens settled, by operation and result (OK or the failure reason).",
		}, []string{"stream", "consumer", "op", "result"})),
		orphans: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetgate_orphans_total",
			Help: "Messages that arrived for a Fetch whose caller had gone: handed to the next Fetch, or nak'ed back.",
		}, []string{"stream", "consumer", "outcome"})),
		forwards: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetgate_forwards_total",
			Help: "Settle batches forwarded to the issuing replica, by result (ok, issuer_gone, error).",
		}, []string{"result"})),
	}
}

// watch registers the gauges read from a binding's lease table.
func (m *metrics) watch(reg prometheus.Registerer, b *binding) {
	labels := prometheus.Labels{"stream": b.stream, "consumer": b.consumer}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "jetgate_leases_live",
		Help:        "Leases this gateway holds that are not settled (expired ones leave within 100ms).",
		ConstLabels: labels,
	}, func() float64 { return float64(b.leases.live()) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "jetgate_orphans_held",
		Help:        "Messages of canceled Fetches waiting for the next Fetch or a Nak.",
		ConstLabels: labels,
	}, func() float64 {
		b.mu.Lock()
		defer b.mu.Unlock()
		return float64(len(b.orphans))
	}))
}

var emptyReasonNames = [...]string{EmptyNone: "", EmptyNoMessages: "no_messages", EmptyMaxAckPending: "max_ack_pending",
	EmptyMaxBytes: "max_bytes", EmptyMaxWaiting: "max_waiting"}

func (m *metrics) fetch(b *binding, res FetchResult) {
	if n := len(res.Messages); n > 0 {
		m.fetched.WithLabelValues(b.stream, b.consumer).Add(float64(n))
		return
	}
	m.empty.WithLabelValues(b.stream, b.consumer, emptyReasonNames[res.Empty]).Inc()
}

// settled counts a batch's outcomes, one label lookup per distinct result
// rather than per token.
func (m *metrics) settled(b *binding, op SettleOp, outs []Outcome) {
	ok := 0
	var failed map[string]int
	for _, o := range outs {
		if o.Err == nil {
			ok++
			continue
		}
		if failed == nil {
			failed = make(map[string]int)
		}
		failed[reasonOf(o.Err)]++
	}
	name := strings.ToUpper(op.String())
	if ok > 0 {
		m.settles.WithLabelValues(b.stream, b.consumer, name, "OK").Add(float64(ok))
	}
	for reason, n := range failed {
		m.settles.WithLabelValues(b.stream, b.consumer, name, reason).Add(float64(n))
	}
}
