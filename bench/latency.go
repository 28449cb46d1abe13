package bench

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Latency summarises a set of latencies.
type Latency struct {
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
}

// fetchLatencyWarmup samples are taken and thrown away first: the first
// calls dial, open streams and warm caches.
const fetchLatencyWarmup = 10

// fetchLatency samples the mode's Fetch(1) with one message ready, one
// message at a time.
func fetchLatency(ctx context.Context, m mode, pub func(context.Context) error, samples int) (Latency, error) {
	ds := make([]time.Duration, 0, samples)
	for i := range fetchLatencyWarmup + samples {
		d, err := m.fetchOne(ctx, pub)
		if err != nil {
			return Latency{}, fmt.Errorf("Fetch(1): %w", err)
		}
		if i >= fetchLatencyWarmup {
			ds = append(ds, d)
		}
	}
	return summarise(ds), nil
}

func summarise(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[int(q*float64(len(ds)-1))].Round(time.Microsecond) }
	return Latency{P50: at(0.50), P99: at(0.99), Max: ds[len(ds)-1].Round(time.Microsecond)}
}
