package replica

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/lease"
)

// consumerCounters reads the counters of every consumer the replica serves
// from the consumer's Counts when scraped. Every known label value is there
// from the start, at zero, so that a dashboard's rate() has a first sample;
// a consumer no longer served has none.
type consumerCounters struct{ r *binder }

var (
	counterFetched = prometheus.NewDesc("jetgate_fetched_messages_total",
		"Messages leased, by Fetch, Consume and push alike.", consumerLabels, nil)
	counterEmpty = prometheus.NewDesc("jetgate_fetch_empty_total",
		"Fetches that returned no message, by reason.", []string{"stream", "consumer", "reason"}, nil)
	counterSettles = prometheus.NewDesc("jetgate_settles_total",
		"Tokens settled, by callers and push alike, by operation and result (OK or the failure reason).", []string{"stream", "consumer", "op", "result"}, nil)
	counterOrphans = prometheus.NewDesc("jetgate_orphans_total",
		"Messages whose caller had gone: those of a canceled Fetch, handed to the next Fetch or nak'ed back, and the unsettled leases of an ended Consume, nak'ed back (consume_returned).",
		[]string{"stream", "consumer", "outcome"}, nil)
	counterResets = prometheus.NewDesc("jetgate_consumer_resets_total",
		"Consumer resets this replica noticed (by the reset request, another replica's word, or a delivery that showed one); each voids the leases the replica held.",
		consumerLabels, nil)
	counterPolicy = prometheus.NewDesc("jetgate_consumer_policy_changes_total",
		"Changes of the consumer's redelivery timing (ack_wait, backoff) or limits that this replica saw on the server (an operator's edit, a restart with other settings); leases are re-dated where the server now redelivers sooner.",
		consumerLabels, nil)
	counterDrains = prometheus.NewDesc("jetgate_consumer_reset_drains_given_up_total",
		"Waits of a consumer reset for the settles sent before it voided the leases that gave up, the server leaving one unanswered: the reset's deliveries went out with it in flight (it then fails LEASE_EXPIRED). Each reset waits on every replica; one a reset is a slow NATS, many a settle path to look at.",
		consumerLabels, nil)
)

var emptyReasonNames = [...]string{consumer.EmptyNone: "", consumer.EmptyNoMessages: "no_messages",
	consumer.EmptyMaxAckPending: "max_ack_pending", consumer.EmptyMaxBytes: "max_bytes", consumer.EmptyMaxWaiting: "max_waiting",
	consumer.EmptyPaused: "paused", consumer.EmptyPinned: "pinned", consumer.EmptyBelowMinPending: "below_min_pending"}

var settledOps = [...]lease.Op{lease.OpAck, lease.OpNak, lease.OpTerm, lease.OpExtend}

func (g *consumerCounters) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range [...]*prometheus.Desc{counterFetched, counterEmpty, counterSettles, counterOrphans, counterResets, counterPolicy, counterDrains} {
		ch <- d
	}
}

func (g *consumerCounters) Collect(ch chan<- prometheus.Metric) {
	for _, b := range g.r.all() {
		c := b.c
		k := c.Counts()
		count := func(d *prometheus.Desc, v uint64, labels ...string) {
			ch <- prometheus.MustNewConstMetricWithCreatedTimestamp(d, prometheus.CounterValue, float64(v), k.Since,
				append([]string{c.Stream, c.Name}, labels...)...)
		}
		count(counterFetched, k.Fetched.Load())
		for reason, name := range emptyReasonNames {
			if reason != int(consumer.EmptyNone) {
				count(counterEmpty, k.Empty[reason].Load(), name)
			}
		}
		for _, op := range settledOps {
			count(counterSettles, k.Settled[op].Load(), opName(op), "OK")
		}
		for f, n := range k.Failed() {
			count(counterSettles, n, opName(f.Op), f.Reason)
		}
		for outcome, name := range consumer.OrphanOutcomes {
			count(counterOrphans, k.Orphans[outcome].Load(), name)
		}
		count(counterResets, k.Resets.Load())
		count(counterPolicy, k.PolicyChanges.Load())
		count(counterDrains, k.DrainsGivenUp.Load())
	}
}

func opName(op lease.Op) string { return strings.ToUpper(op.String()) }
