package push

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the pushers' Prometheus metrics, by stream and consumer.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight *prometheus.GaugeVec
	up       *prometheus.GaugeVec
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
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.inFlight, m.up)
	}
	return m
}

// boundMetrics are one pusher's.
type boundMetrics struct {
	requests outcomes
	duration prometheus.Observer
	inFlight prometheus.Gauge
	up       prometheus.Gauge
}

type outcomes struct{ acked, retried, terminated prometheus.Counter }

func (m *Metrics) bind(stream, consumer string) boundMetrics {
	if m == nil {
		m = NewMetrics(nil)
	}
	out := func(o string) prometheus.Counter { return m.requests.WithLabelValues(stream, consumer, o) }
	return boundMetrics{
		requests: outcomes{out("acked"), out("retried"), out("terminated")},
		duration: m.duration.WithLabelValues(stream, consumer),
		inFlight: m.inFlight.WithLabelValues(stream, consumer),
		up:       m.up.WithLabelValues(stream, consumer),
	}
}
