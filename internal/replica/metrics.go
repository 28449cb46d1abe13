package replica

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetgate/jetgate/internal/consumer"
)

// metrics are the gateway's Prometheus metrics of its own. A consumer's
// counters and gauges are read from the consumer when scraped
// (consumerCounters, consumerGauges).
type metrics struct {
	forwards *prometheus.CounterVec

	deadLetters     *prometheus.CounterVec // copied, by reason
	deadLetterDepth *prometheus.GaugeVec   // waiting in the dead-letter stream
	oldestUnacked   *prometheus.GaugeVec
	unwatching      sync.Mutex // orders unwatch with the oldest ages a read sets
}

func newMetrics(reg prometheus.Registerer, r *binder, dead *deadLetters) *metrics {
	f := func(c *prometheus.CounterVec) *prometheus.CounterVec {
		reg.MustRegister(c)
		return c
	}
	m := &metrics{
		deadLetters: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetgate_dead_letters_total",
			Help: "Messages copied to their consumer's dead-letter subject, by reason (MAX_DELIVERIES, TERM).",
		}, []string{"stream", "consumer", "reason"})),
		deadLetterDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "jetgate_dead_letters",
			Help: "Dead letters waiting in the consumer's dead-letter stream (read from the server when scraped, at most every 3s).",
		}, []string{"stream", "consumer"}),
		oldestUnacked: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "jetgate_oldest_unacked_age_seconds",
			Help: "Age of the oldest message the consumer has not acknowledged (read from the server when scraped, at most every 3s); alert on it.",
		}, []string{"stream", "consumer"}),
		forwards: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetgate_forwards_total",
			Help: "Settle batches forwarded to the issuing replica, by result (ok, issuer_gone, error), and forged forwards refused (forged).",
		}, []string{"result"})),
	}
	for _, result := range [...]string{"ok", "issuer_gone", "error", "forged"} {
		m.forwards.WithLabelValues(result)
	}
	reg.MustRegister(&consumerGauges{r: r, dead: dead}, &consumerCounters{r: r}, &serverGauges{r: r, dead: dead, m: m})
	return m
}

// unwatch drops the series of a consumer no longer served.
func (m *metrics) unwatch(c *consumer.Consumer) {
	m.unwatching.Lock()
	defer m.unwatching.Unlock()
	m.oldestUnacked.DeletePartialMatch(prometheus.Labels{"stream": c.Stream, "consumer": c.Name})
}

// setOldest sets the oldest unacknowledged age of c, unless bd no longer
// serves it: a read of the server's gauges goes on while consumers are
// unbound, and must not bring back a series unwatch dropped.
func (m *metrics) setOldest(bd *binder, c *consumer.Consumer, age float64) {
	m.unwatching.Lock()
	defer m.unwatching.Unlock()
	if bd.bound(c.Stream, c.Name) == c {
		m.oldestUnacked.WithLabelValues(c.Stream, c.Name).Set(age)
	}
}

// watchDeadLetters starts the dead-letter metrics of a consumer with a
// dead_letter at zero.
func (m *metrics) watchDeadLetters(stream, name string) {
	for _, reason := range [...]string{"MAX_DELIVERIES", "TERM"} {
		m.deadLetters.WithLabelValues(stream, name, reason)
	}
	m.deadLetterDepth.WithLabelValues(stream, name)
}
