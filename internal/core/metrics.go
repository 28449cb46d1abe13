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

func newMetrics(reg prometheus.Registerer) *metrics {
	f := func(c *prometheus.CounterVec) *prometheus.CounterVec {
		reg.MustRegister(c)
		return c
	}
	g := func(v *prometheus.GaugeVec) *prometheus.GaugeVec {
		reg.MustRegister(v)
		return v
	}
	m := &metrics{
		deadLetters: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetgate_dead_letters_total",
			Help: "Messages copied to their consumer's dead-letter subject, by reason (MAX_DELIVERIES, TERM).",
		}, []string{"stream", "consumer", "reason"})),
		deadLetterDepth: g(prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "jetgate_dead_letters",
			Help: "Dead letters waiting in the consumer's dead-letter stream (refreshed every 3s).",
		}, []string{"stream", "consumer"})),
		oldestUnacked: g(prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "jetgate_oldest_unacked_age_seconds",
			Help: "Age of the oldest message the consumer has not acknowledged (refreshed every 3s); alert on it.",
		}, []string{"stream", "consumer"})),
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
	return m
}

// watch registers the gauges read from a binding's lease table, and starts
// the consumer's counters at zero, so that a rate() has a first sample
// before the first event.
func (m *metrics) watch(reg prometheus.Registerer, c *consumer.Consumer) {
	m.fetched.WithLabelValues(c.Stream, c.Name)
	for _, reason := range emptyReasonNames[consumer.EmptyNone+1:] {
		m.empty.WithLabelValues(c.Stream, c.Name, reason)
	}
	for _, op := range [...]lease.Op{lease.OpAck, lease.OpNak, lease.OpTerm, lease.OpExtend} {
		m.settles.WithLabelValues(c.Stream, c.Name, strings.ToUpper(op.String()), "OK")
	}
	m.oldestUnacked.WithLabelValues(c.Stream, c.Name)
	labels := prometheus.Labels{"stream": c.Stream, "consumer": c.Name}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "jetgate_leases_live",
		Help:        "Leases this gateway holds that are not settled (expired ones leave within 100ms).",
		ConstLabels: labels,
	}, func() float64 { return float64(c.Leases()) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "jetgate_orphans_held",
		Help:        "Messages of canceled Fetches waiting for the next Fetch or a Nak.",
		ConstLabels: labels,
	}, func() float64 { return float64(c.Orphans()) }))
	pulls := func(name, help string, of func(open, limit, queued int) int) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return float64(of(c.Pulls())) }))
	}
	pulls("jetgate_pulls_open", "Pull requests this gateway has open on the server, canceled ones included until the server ends them.",
		func(open, _, _ int) int { return open })
	pulls("jetgate_pulls_allowed", "Pull requests this gateway may have open at once: its share of the consumer's max_waiting.",
		func(_, limit, _ int) int { return limit })
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "jetgate_pulls_abandoned",
		Help:        "Pull requests that callers who went away left open on the server, held by the orphan pool until the server ends them.",
		ConstLabels: labels,
	}, func() float64 { return float64(c.AbandonedPulls()) }))
	pulls("jetgate_fetches_queued", "Fetches (and Consume pulls) waiting in line for a place among this gateway's pulls.",
		func(_, _, queued int) int { return queued })
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "jetgate_replicas",
		Help:        "Gateway replicas serving the consumer, this one included, as the roster in NATS has them.",
		ConstLabels: labels,
	}, func() float64 { return float64(c.Replicas()) }))
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
