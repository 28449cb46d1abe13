package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// WaitingReport is the waiting measurement's table: one row per replica
// count.
type WaitingReport struct {
	Machine Machine         `json:"machine"`
	Results []WaitingResult `json:"waiting"`
}

func (r WaitingResult) progress() string {
	return fmt.Sprintf("%d replicas: %d/%d callers served in %v; %d pulls open, %d queued, server waiting %d of %d; %.0f B and %.2f goroutines per waiting Fetch",
		r.Replicas, r.Served, r.Callers, r.AllServed.Round(time.Millisecond), r.PullsOpen, r.FetchesQueued,
		r.ServerWaiting, r.ConsumerMaxWaiting, r.BytesPerWaiting, r.GoroutinesPerWaiting)
}

func (rep WaitingReport) print(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(cols ...string) { fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t") }
	row("replicas", "callers", "served", "per replica", "MAX_WAITING", "other empty", "errors",
		"all served", "p50", "p99", "max", "MiB/1000 waiting", "B/waiting", "goroutines/waiting",
		"server waiting/max", "stranded")
	for _, r := range rep.Results {
		row(fmt.Sprint(r.Replicas), fmt.Sprint(r.Callers), fmt.Sprint(r.Served), spread(r.ServedPerReplica),
			fmt.Sprint(r.MaxWaiting), fmt.Sprint(r.OtherEmpty), fmt.Sprint(r.Errors),
			ms(r.AllServed), ms(r.Latency.P50), ms(r.Latency.P99), ms(r.Latency.Max),
			fmt.Sprintf("%.2f", r.BytesPerWaiting*1000/(1<<20)), thousands(r.BytesPerWaiting),
			fmt.Sprintf("%.2f", r.GoroutinesPerWaiting), fmt.Sprintf("%d/%d", r.ServerWaiting, r.ConsumerMaxWaiting),
			fmt.Sprint(r.Stranded+r.Redelivered))
	}
	tw.Flush()
	fmt.Fprintln(out, "Latency is from the start of publishing to each caller's return. Memory is heap and stacks in use, after a")
	fmt.Fprintln(out, "collection, summed over the replica processes, with every caller waiting less before any caller; stranded")
	fmt.Fprintln(out, "is what the consumer had pending, unacknowledged or redelivered once every token was acked.")
	for _, r := range rep.Results {
		if r.FirstError != "" {
			fmt.Fprintf(out, "%d replicas, first error: %s\n", r.Replicas, r.FirstError)
		}
		if r.AckFailures > 0 {
			fmt.Fprintf(out, "%d replicas: %d acks refused\n", r.Replicas, r.AckFailures)
		}
	}
}

// spread shows the served per replica in full for a few replicas, else
// their range.
func spread(per []int) string {
	if len(per) == 0 {
		return "-"
	}
	if len(per) > 4 {
		return fmt.Sprintf("%d-%d", slices.Min(per), slices.Max(per))
	}
	s := make([]string, len(per))
	for i, n := range per {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, "/")
}

func writeJSON(file string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(b, '\n'), 0o644)
}
