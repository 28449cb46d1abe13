package replica

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetgate/jetgate/internal/deadletter"
	"github.com/jetgate/jetgate/internal/errs"
)

// consumerGauges reads the gauges of every consumer the replica serves from
// the consumer itself when scraped: nothing to register or unregister as
// consumers are bound and unbound.
type consumerGauges struct {
	r    *binder
	dead *deadLetters
}

var (
	consumerLabels = []string{"stream", "consumer"}
	gaugeLeases    = prometheus.NewDesc("jetgate_leases_live",
		"Leases this gateway holds that are not settled (expired ones leave within 100ms).", consumerLabels, nil)
	gaugeOrphans = prometheus.NewDesc("jetgate_orphans_held",
		"Messages of canceled Fetches waiting for the next Fetch or a Nak.", consumerLabels, nil)
	gaugePullsOpen = prometheus.NewDesc("jetgate_pulls_open",
		"Pull requests this gateway has open on the server, canceled ones included until the server ends them.", consumerLabels, nil)
	gaugePullsAllowed = prometheus.NewDesc("jetgate_pulls_allowed",
		"Pull requests this gateway may have open at once: its share of the consumer's max_waiting.", consumerLabels, nil)
	gaugePullsAbandoned = prometheus.NewDesc("jetgate_pulls_abandoned",
		"Pull requests that callers who went away left open on the server, held by the orphan pool until the server ends them.", consumerLabels, nil)
	gaugeQueued = prometheus.NewDesc("jetgate_fetches_queued",
		"Fetches (and Consume pulls) waiting in line for a place among this gateway's pulls.", consumerLabels, nil)
	gaugeReplicas = prometheus.NewDesc("jetgate_replicas",
		"Gateway replicas serving the consumer, this one included, as the roster in NATS has them.", consumerLabels, nil)
	gaugeTermsUnrecorded = prometheus.NewDesc("jetgate_terms_unrecorded",
		"Terms whose dead letter rests on this gateway for now, NATS being away: sent with no answer (sent again once NATS is back), or confirmed with their record not stored yet (tried again). The server may have dropped their advisories as it stopped: while this is above 0, losing this gateway may lose those dead letters.",
		consumerLabels, nil)
	gaugeBound = prometheus.NewDesc("jetgate_consumers_bound",
		"Consumers this gateway serves, by source: its configuration, or bound on demand.", []string{"source"}, nil)
)

func (g *consumerGauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range [...]*prometheus.Desc{gaugeLeases, gaugeOrphans, gaugePullsOpen, gaugePullsAllowed, gaugePullsAbandoned, gaugeQueued, gaugeReplicas, gaugeTermsUnrecorded, gaugeBound} {
		ch <- d
	}
}

func (g *consumerGauges) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	for _, b := range g.r.all() {
		c := b.c
		open, limit, queued := c.Pulls()
		gauge(gaugeLeases, c.Leases(), c.Stream, c.Name)
		gauge(gaugeOrphans, c.Orphans(), c.Stream, c.Name)
		gauge(gaugePullsOpen, open, c.Stream, c.Name)
		gauge(gaugePullsAllowed, limit, c.Stream, c.Name)
		gauge(gaugePullsAbandoned, c.AbandonedPulls(), c.Stream, c.Name)
		gauge(gaugeQueued, queued, c.Stream, c.Name)
		gauge(gaugeReplicas, c.Replicas(), c.Stream, c.Name)
		gauge(gaugeTermsUnrecorded, c.UnsureTerms()+g.dead.unstoredOf(c.Stream, c.Name), c.Stream, c.Name)
	}
	config, onDemand := g.r.boundCounts()
	gauge(gaugeBound, config, "config")
	gauge(gaugeBound, onDemand, "on_demand")
}

// serverGauges are the gauges that need the server (the oldest
// unacknowledged age, the dead letters waiting): read when scraped, at most
// every statsEvery, one CONSUMER.LIST page per 256 consumers of a stream,
// and a message read only for a consumer whose ack floor moved. Nobody
// scraping costs the server nothing. A scrape waits at most scrapeWait for
// the read it starts: while NATS stalls it answers with the values last
// read, and the read goes on for the next scrape.
type serverGauges struct {
	r    *binder
	dead *deadLetters
	m    *metrics

	mu      sync.Mutex
	at      time.Time     // when the last read ended
	reading chan struct{} // closed when the read under way ends; nil: none
	oldest  map[consumerKey]oldestSeen
}

// scrapeWait bounds how long a scrape waits for the server's gauges: well
// within Prometheus's scrape timeout, and far longer than a read takes
// while NATS answers.
const scrapeWait = time.Second

// oldestSeen is a consumer's oldest unacknowledged message as last read.
type oldestSeen struct {
	floor uint64    // the ack floor it was read at
	at    time.Time // when it was stored; zero: none
}

func (g *serverGauges) Describe(ch chan<- *prometheus.Desc) {
	g.m.oldestUnacked.Describe(ch)
	g.m.deadLetterDepth.Describe(ch)
}

func (g *serverGauges) Collect(ch chan<- prometheus.Metric) {
	if done := g.read(); done != nil {
		t := time.NewTimer(scrapeWait)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
	}
	g.m.oldestUnacked.Collect(ch)
	g.m.deadLetterDepth.Collect(ch)
}

// read starts reading the gauges from the server, unless a read is under
// way or the last ended less than statsEvery ago, and returns what is
// closed when the read under way ends (nil: none).
func (g *serverGauges) read() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock() // before the read can end: it takes g.mu
	if g.reading != nil || time.Since(g.at) < statsEvery {
		return g.reading
	}
	done := make(chan struct{})
	if !g.r.run.Go(func() {
		ctx, cancel := context.WithTimeout(g.r.run.ctx, g.r.timeout)
		g.refresh(ctx)
		cancel()
		g.mu.Lock()
		g.at, g.reading = time.Now(), nil
		g.mu.Unlock()
		close(done)
	}) {
		return nil
	}
	g.reading = done
	return done
}

// refresh reads the gauges from the server, one read at a time (read). A
// consumer the server does not answer for keeps its last value.
func (g *serverGauges) refresh(ctx context.Context) {
	if g.oldest == nil {
		g.oldest = make(map[consumerKey]oldestSeen)
	}
	byStream := make(map[string]map[string]*binding)
	for _, b := range g.r.all() {
		if byStream[b.c.Stream] == nil {
			byStream[b.c.Stream] = make(map[string]*binding)
		}
		byStream[b.c.Stream][b.c.Name] = b
	}
	for stream, served := range byStream {
		s, err := g.r.stream(ctx, stream)
		if err != nil {
			continue
		}
		list := s.ListConsumers(ctx)
		for ci := range list.Info() {
			if b := served[ci.Name]; b != nil {
				g.refreshOldest(ctx, b, ci)
				delete(served, ci.Name)
			}
		}
		if err := list.Err(); err == nil || errors.Is(err, jetstream.ErrStreamNotFound) {
			g.refreshUnlisted(ctx, served)
		}
	}
	for key, route := range g.dead.routes {
		if n, err := deadletter.Count(ctx, g.r.js, route); err == nil || errors.Is(err, errs.ErrDeadLetterStreamNotFound) {
			g.m.deadLetterDepth.WithLabelValues(key.stream, key.name).Set(float64(n))
		}
	}
}

// refreshUnlisted sets to 0 the age of each served consumer that a whole
// listing left out, or whose stream is gone, and that the server says is
// gone (deleted with other tools): nothing of it waits to be acked, and its
// last age would stay for good. One left out otherwise (a cluster lists
// apart those whose info came late) keeps its last value.
func (g *serverGauges) refreshUnlisted(ctx context.Context, unlisted map[string]*binding) {
	for _, b := range unlisted {
		if _, err := b.c.Info(ctx); errors.Is(err, errs.ErrConsumerNotFound) {
			delete(g.oldest, consumerKey{b.c.Stream, b.c.Name})
			g.m.setOldest(g.r, b.c, 0)
		}
	}
}

func (g *serverGauges) refreshOldest(ctx context.Context, b *binding, ci *jetstream.ConsumerInfo) {
	key := consumerKey{b.c.Stream, b.c.Name}
	seen, ok := g.oldest[key]
	// Read again where the floor moved, and where the last read found
	// nothing: messages may have come since without moving the floor (a
	// consumer nobody fetches from). Nothing pending asks nothing.
	if !ok || seen.floor != ci.AckFloor.Stream || seen.at.IsZero() || ci.NumPending+uint64(ci.NumAckPending) == 0 {
		age, err := b.c.OldestUnackedAge(ctx, ci)
		if err != nil {
			return
		}
		seen = oldestSeen{floor: ci.AckFloor.Stream}
		if age > 0 {
			seen.at = time.Now().Add(-age)
		}
		g.oldest[key] = seen
	}
	age := 0.0
	if !seen.at.IsZero() {
		age = time.Since(seen.at).Seconds()
	}
	g.m.setOldest(g.r, b.c, age)
}
