package bench

import (
	"context"
	"fmt"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one reading of a soak: a replica's own figures from /metrics.
type Sample struct {
	At         time.Duration
	Acked      int64 // messages acked, through every replica, since the replica's last sample
	Goroutines float64
	HeapBytes  float64
	RSSBytes   float64
	Leases     float64
	Mallocs    float64 // allocations since the process started
	// AllocsPerMsg is the replica's allocations since its last sample per
	// message acked (through every replica) since then: with one replica,
	// the process's cost of a message.
	AllocsPerMsg float64
}

// Flatness compares the mean of the last third of a figure's samples with
// the first third.
type Flatness struct {
	Growth float64 // as a fraction of the first third's mean
	Flat   bool
	TooFew bool // fewer than three samples: nothing to compare, called flat
}

func (f Flatness) String() string {
	if f.TooFew {
		return "too few samples"
	}
	return fmt.Sprintf("%+.0f%% (flat: %v)", 100*f.Growth, f.Flat)
}

// ReplicaSoak is one replica's samples and whether its figures stayed flat.
type ReplicaSoak struct {
	Samples    []Sample
	Goroutines Flatness
	Heap       Flatness
	RSS        Flatness
	Leases     Flatness
	Allocs     Flatness // allocations per message
}

// SubscriberResult is what a library's subscriber process did in a soak.
type SubscriberResult struct {
	Library string
	Replica int   // the index of the replica it consumed through
	Handled int64 // handler calls finished
	Failed  int64 // errors the library reported to its error callback
	Final   string
}

// SoakResult is a soak's totals and each replica's samples and verdicts.
type SoakResult struct {
	Published int64
	Acked     int64 // by the bench's workers, or handled by the subscribers
	// Pending and AckPending are the consumer's once everything consuming
	// it has stopped: its backlog. Both -1 when the bench has no NATS URL.
	Pending, AckPending int64
	Replicas            []ReplicaSoak
	Subscribers         []SubscriberResult
}

// Absolute slacks of the flatness checks: a figure that grew by less than
// its slack is flat whatever its share, for small figures move by that much
// with no leak behind it.
const (
	// goroutineSlack: a few gRPC streams and connections coming and going.
	goroutineSlack = 10
	// heapSlack: the garbage of a collection cycle at soak rates.
	heapSlack = 8 << 20
	// rssSlack: twice the heap's, for the runtime returns freed memory to
	// the system lazily and RSS counts stacks and the runtime's own.
	rssSlack = 16 << 20
	// leaseSlack: leases in flight at one instant, a few batches' worth;
	// a leak grows past it in seconds at soak rates.
	leaseSlack = 64
	// allocsSlack: allocations per message.
	allocsSlack = 5
)

// judge says, from its samples, whether the replica's figures stayed flat.
func (rs *ReplicaSoak) judge() {
	ss := rs.Samples
	rs.Goroutines = growth(ss, func(s Sample) float64 { return s.Goroutines }, goroutineSlack)
	rs.Heap = growth(ss, func(s Sample) float64 { return s.HeapBytes }, heapSlack)
	rs.RSS = growth(ss, func(s Sample) float64 { return s.RSSBytes }, rssSlack)
	rs.Leases = growth(ss, func(s Sample) float64 { return s.Leases }, leaseSlack)
	// The first sample has no allocations per message: it starts the count.
	rs.Allocs = growth(ss[min(1, len(ss)):], func(s Sample) float64 { return s.AllocsPerMsg }, allocsSlack)
}

// growth compares the mean of the last third of the samples with the first
// third; it is flat when it grew by less than a quarter or than slack.
func growth(ss []Sample, v func(Sample) float64, slack float64) Flatness {
	n := len(ss) / 3
	if n == 0 {
		return Flatness{Flat: true, TooFew: true}
	}
	mean := func(part []Sample) float64 {
		var t float64
		for _, s := range part {
			t += v(s)
		}
		return t / float64(len(part))
	}
	first, last := mean(ss[:n]), mean(ss[len(ss)-n:])
	if first == 0 {
		return Flatness{Flat: last <= slack}
	}
	g := (last - first) / first
	return Flatness{Growth: g, Flat: g < 0.25 || last-first < slack}
}

func scrape(ctx context.Context, hc *http.Client, url string) (Sample, error) {
	fams, err := metricFamilies(ctx, hc, url)
	if err != nil {
		return Sample{}, err
	}
	sum := func(name string) float64 { return sumOf(fams, name, "", "") }
	return Sample{
		Goroutines: sum("go_goroutines"),
		HeapBytes:  sum("go_memstats_heap_inuse_bytes"),
		RSSBytes:   sum("process_resident_memory_bytes"),
		Leases:     sum("jetgate_leases_live"),
		Mallocs:    sum("go_memstats_mallocs_total"),
	}, nil
}

// metricFamilies reads the Prometheus page at url.
func metricFamilies(ctx context.Context, hc *http.Client, url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// sumOf adds up the samples of the named metric. Given a stream, it counts
// only the samples of that stream's consumer (and those with no stream).
func sumOf(fams map[string]*dto.MetricFamily, name, stream, consumer string) float64 {
	var t float64
	for _, m := range fams[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if s, ok := labels["stream"]; stream != "" && ok && (s != stream || labels["consumer"] != consumer) {
			continue
		}
		t += value(m)
	}
	return t
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	}
	return 0
}
