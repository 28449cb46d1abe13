package replica

import (
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
	reg.MustRegister(&consumerGauges{r: r}, &consumerCounters{r: r}, &serverGauges{r: r, dead: dead, m: m})
	return m
}

// unwatch drops the series of a consumer no longer served.
func (m *metrics) unwatch(c *consumer.Consumer) {
	m.oldestUnacked.DeletePartialMatch(prometheus.Labels{"stream": c.Stream, "consumer": c.Name})
}

// watchDeadLetters starts the dead-letter metrics of a consumer with a
// dead_letter at zero.
func (m *metrics) watchDeadLetters(stream, name string) {
	for _, reason := range [...]string{"MAX_DELIVERIES", "TERM"} {
		m.deadLetters.WithLabelValues(stream, name, reason)
	}
	m.deadLetterDepth.WithLabelValues(stream, name)
}
