package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// Sample is one reading of a soak: the gateway's own figures from /metrics.
type Sample struct {
	At         time.Duration
	Acked      int64 // messages acked since the last sample
	Goroutines float64
	HeapBytes  float64
	RSSBytes   float64
	Leases     float64
	Mallocs    float64 // allocations since the process started
	// AllocsPerMsg is the whole process's allocations since the last sample
	// per message acked since then.
	AllocsPerMsg float64
}

// SoakResult is a soak's samples and whether memory and goroutines stayed
// flat: the mean of the last third of the samples against the first third.
type SoakResult struct {
	Samples         []Sample
	Published       int64
	Acked           int64
	GoroutinesFlat  bool
	HeapFlat        bool
	GoroutineGrowth float64
	HeapGrowth      float64
	AllocsFlat      bool
	AllocsGrowth    float64
}

// soak publishes at o.Rate messages per second and consumes them for
// o.Soak, sampling the gateway's /metrics every o.Every.
func soak(ctx context.Context, cons jetgatev1.ConsumerServiceClient, strm jetgatev1.StreamServiceClient, o Options) (SoakResult, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Soak)
	defer cancel()
	var res SoakResult
	var published, acked atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, o.Workers+1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs <- paced(ctx, o.Rate, func() error {
			_, err := strm.Publish(ctx, &jetgatev1.PublishRequest{Stream: o.Stream, Subject: o.Subject, Data: bytes.Repeat([]byte("x"), o.Size)})
			if err == nil {
				published.Add(1)
			}
			if ending(ctx, err) {
				return nil
			}
			return err
		})
	}()
	c := grpcClient{cons, o}
	for w := 0; w < o.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				toks, err := c.fetch(ctx)
				if err == nil && len(toks) > 0 {
					err = c.ack(ctx, toks)
				}
				if err != nil {
					if !ending(ctx, err) {
						errs <- err
					}
					return
				}
				acked.Add(int64(len(toks)))
			}
		}()
	}
	start := time.Now()
	tick := time.NewTicker(o.Every)
	defer tick.Stop()
	var last int64
	var lastMallocs float64
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case err := <-errs:
			if err != nil && !ending(ctx, err) {
				cancel()
				wg.Wait()
				return res, err
			}
		case <-tick.C:
			s, err := scrape(ctx, "http://"+o.HTTPAddr+"/metrics")
			if err != nil {
				continue
			}
			now := acked.Load()
			s.At, s.Acked, last = time.Since(start).Round(time.Second), now-last, now
			if s.Acked > 0 && lastMallocs > 0 {
				s.AllocsPerMsg = (s.Mallocs - lastMallocs) / float64(s.Acked)
			}
			lastMallocs = s.Mallocs
			res.Samples = append(res.Samples, s)
			fmt.Fprintf(o.Out, "soak %6v acked/s %7.0f goroutines %5.0f heap %6.1f MiB rss %6.1f MiB leases %5.0f allocs/msg %6.1f\n",
				s.At, float64(s.Acked)/o.Every.Seconds(), s.Goroutines, s.HeapBytes/(1<<20), s.RSSBytes/(1<<20), s.Leases, s.AllocsPerMsg)
		}
	}
	wg.Wait()
	res.Published, res.Acked = published.Load(), acked.Load()
	res.GoroutineGrowth, res.GoroutinesFlat = growth(res.Samples, func(s Sample) float64 { return s.Goroutines }, 10)
	res.HeapGrowth, res.HeapFlat = growth(res.Samples, func(s Sample) float64 { return s.HeapBytes }, 8<<20)
	// The first sample has no allocations per message: it starts the count.
	if len(res.Samples) > 1 {
		res.AllocsGrowth, res.AllocsFlat = growth(res.Samples[1:], func(s Sample) float64 { return s.AllocsPerMsg }, 5)
	}
	fmt.Fprintf(o.Out, "soak %v at %d msg/s: published %d, acked %d; goroutines %+.0f%% (flat: %v), heap %+.0f%% (flat: %v), allocs/msg %+.0f%% (flat: %v)\n",
		o.Soak, o.Rate, res.Published, res.Acked, 100*res.GoroutineGrowth, res.GoroutinesFlat, 100*res.HeapGrowth, res.HeapFlat,
		100*res.AllocsGrowth, res.AllocsFlat)
	return res, nil
}

// ending reports whether err is only the soak's end: its context is done,
// or the server, which gets the same deadline, saw it pass a moment first.
func ending(ctx context.Context, err error) bool {
	if err == nil {
		return false
	}
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && status.Code(err) == codes.DeadlineExceeded && time.Until(dl) < time.Second
}

// paced calls f rate times a second until ctx ends.
func paced(ctx context.Context, rate int, f func() error) error {
	const tick = 10 * time.Millisecond
	perTick := float64(rate) * tick.Seconds()
	t := time.NewTicker(tick)
	defer t.Stop()
	var owed float64
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		for owed += perTick; owed >= 1; owed-- {
			if err := f(); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
	}
}

// growth compares the mean of the last third of the samples with the first
// third; it is flat when it grew by less than a quarter or than slack.
func growth(ss []Sample, v func(Sample) float64, slack float64) (float64, bool) {
	n := len(ss) / 3
	if n == 0 {
		return 0, true
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
		return 0, last <= slack
	}
	g := (last - first) / first
	return g, g < 0.25 || last-first < slack
}

func scrape(ctx context.Context, url string) (Sample, error) {
	fams, err := metricFamilies(ctx, http.DefaultClient, url)
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
