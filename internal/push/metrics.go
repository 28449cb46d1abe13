package push

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the pushers' Prometheus metrics, by stream and consumer.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight *prometheus.GaugeVec
	up       *prometheus.GaugeVec
	failures *prometheus.CounterVec
}

// NewMetrics registers the push metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetgate_push_requests_total",
			Help: "Pushed messages by outcome: acked (2xx), retried (to be pushed again), terminated (a final 4xx); a batch counts each of its messages.",
		}, []string{"stream", "consumer", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "jetgate_push_duration_seconds",
			Help:    "How long a push request took, until its answer or its failure.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 9),
		}, []string{"stream", "consumer"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "jetgate_push_in_flight",
			Help: "Push requests running now.",
		}, []string{"stream", "consumer"}),
		up: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "jetgate_push_endpoint_up",
			Help: "1 while the endpoint takes pushes, 0 while it is held back (one request at a time).",
		}, []string{"stream", "consumer"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetgate_push_nats_failures_total",
			Help: "A pusher's pulls, and tokens it settled, that failed for NATS (UNAVAILABLE: the connection away, or connected and JetStream not answering: no leader or quorum, a stream offline), by op (pull, ack, nak, term); the pusher tries each again. A push-only deployment makes no call that would fail UNAVAILABLE: JetStream not answering shows here.",
		}, []string{"stream", "consumer", "op"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.inFlight, m.up, m.failures)
	}
	return m
}

// boundMetrics are one pusher's.
type boundMetrics struct {
	requests outcomes
	duration prometheus.Observer
	inFlight prometheus.Gauge
	up       prometheus.Gauge
	// natsFailed counts what NATS failed of the pusher's, by op: "pull",
	// and a settle's (lease.Op's String).
	natsFailed func(op string) prometheus.Counter
}

type outcomes struct{ acked, retried, terminated prometheus.Counter }

func (m *Metrics) bind(stream, consumer string) boundMetrics {
	if m == nil {
		m = NewMetrics(nil)
	}
	out := func(o string) prometheus.Counter { return m.requests.WithLabelValues(stream, consumer, o) }
	failed := func(op string) prometheus.Counter { return m.failures.WithLabelValues(stream, consumer, op) }
	for _, op := range []string{"pull", "ack", "nak", "term"} {
		failed(op) // each at 0 from the start, for rate()
	}
	return boundMetrics{
		requests:   outcomes{out("acked"), out("retried"), out("terminated")},
		duration:   m.duration.WithLabelValues(stream, consumer),
		inFlight:   m.inFlight.WithLabelValues(stream, consumer),
		up:         m.up.WithLabelValues(stream, consumer),
		natsFailed: failed,
	}
}
