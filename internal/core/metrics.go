package core

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/settle"
)

// metrics are the gateway's Prometheus metrics. The lease table is the
// source of the lease gauges.
type metrics struct {
	fetched  *prometheus.CounterVec
	empty    *prometheus.CounterVec
	settles  *prometheus.CounterVec
	orphans  *prometheus.CounterVec
	forwards *prometheus.CounterVec

	deadLetters     *prometheus.CounterVec // copied, by reason
	deadLetterDepth *prometheus.GaugeVec   // waiting in the dead-letter stream
	oldestUnacked   *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer, r *Replica) *metrics {
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
			Help: "Messages whose caller had gone: those of a canceled Fetch, handed to the next Fetch or nak'ed back, and the unsettled leases of an ended Consume, nak'ed back (consume_returned).",
		}, []string{"stream", "consumer", "outcome"})),
		forwards: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetgate_forwards_total",
			Help: "Settle batches forwarded to the issuing replica, by result (ok, issuer_gone, error), and forged forwards refused (forged).",
		}, []string{"result"})),
	}
	for _, result := range [...]string{"ok", "issuer_gone", "error", "forged"} {
		m.forwards.WithLabelValues(result)
	}
	reg.MustRegister(&consumerGauges{r: r}, &serverGauges{r: r, m: m})
	return m
}

// watch starts a consumer's counters at zero, so that a rate() has a first
// sample before the first event. Its gauges come from consumerGauges.
func (m *metrics) watch(c *consumer.Consumer) {
	m.fetched.WithLabelValues(c.Stream, c.Name)
	for _, reason := range emptyReasonNames[consumer.EmptyNone+1:] {
		m.empty.WithLabelValues(c.Stream, c.Name, reason)
	}
	for _, op := range [...]lease.Op{lease.OpAck, lease.OpNak, lease.OpTerm, lease.OpExtend} {
		m.settles.WithLabelValues(c.Stream, c.Name, strings.ToUpper(op.String()), "OK")
	}
}

// unwatch drops the series of a consumer no longer served.
func (m *metrics) unwatch(c *consumer.Consumer) {
	labels := prometheus.Labels{"stream": c.Stream, "consumer": c.Name}
	for _, v := range [...]*prometheus.CounterVec{m.fetched, m.empty, m.settles, m.orphans} {
		v.DeletePartialMatch(labels)
	}
	m.oldestUnacked.DeletePartialMatch(labels)
}

// watchDeadLetters starts the dead-letter metrics of a consumer with a
// dead_letter at zero.
func (m *metrics) watchDeadLetters(stream, name string) {
	for _, reason := range [...]string{"MAX_DELIVERIES", "TERM"} {
		m.deadLetters.WithLabelValues(stream, name, reason)
	}
	m.deadLetterDepth.WithLabelValues(stream, name)
}

var emptyReasonNames = [...]string{consumer.EmptyNone: "", consumer.EmptyNoMessages: "no_messages",
	consumer.EmptyMaxAckPending: "max_ack_pending", consumer.EmptyMaxBytes: "max_bytes", consumer.EmptyMaxWaiting: "max_waiting",
	consumer.EmptyPaused: "paused", consumer.EmptyPinned: "pinned", consumer.EmptyBelowMinPending: "below_min_pending"}

func (m *metrics) fetch(c *consumer.Consumer, res consumer.FetchResult) {
	if n := len(res.Messages); n > 0 {
		m.fetched.WithLabelValues(c.Stream, c.Name).Add(float64(n))
		return
	}
	m.empty.WithLabelValues(c.Stream, c.Name, emptyReasonNames[res.Empty]).Inc()
}

// settled counts a batch's outcomes, one label lookup per distinct result
// rather than per token.
func (m *metrics) settled(c *consumer.Consumer, op lease.Op, outs []settle.Outcome) {
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
		failed[errs.Reason(o.Err)]++
	}
	name := strings.ToUpper(op.String())
	if ok > 0 {
		m.settles.WithLabelValues(c.Stream, c.Name, name, "OK").Add(float64(ok))
	}
	for reason, n := range failed {
		m.settles.WithLabelValues(c.Stream, c.Name, name, reason).Add(float64(n))
	}
}
