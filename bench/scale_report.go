package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// print writes the report as a table: requests a second by kind, then each
// replica's CPU and RSS, idle and busy.
func (rep ScaleReport) print(out io.Writer) {
	m := rep.Machine
	fmt.Fprintf(out, "scale: %d consumers (%s) behind %d jetgate replicas; %s, %d CPUs, %s; %.0f%% idle at start\n",
		rep.Consumers, rep.Source, rep.Replicas, m.CPUModel, m.CPUs, m.Memory, m.Idle)
	var ready []string
	for i, d := range rep.Ready {
		if d > 0 {
			ready = append(ready, fmt.Sprintf("replica %d %.1fs", i+1, d.Seconds()))
		} else {
			ready = append(ready, fmt.Sprintf("replica %d not ready", i+1))
		}
	}
	fmt.Fprintf(out, "time to ready: %s\n", strings.Join(ready, ", "))
	if len(rep.Startup) > 0 {
		fmt.Fprintf(out, "requests until ready: %s\n", countsLine(rep.Startup))
	}
	if len(rep.Bind) > 0 {
		fmt.Fprintf(out, "first call of every consumer through every replica: %.1fs; requests: %s\n", rep.BindAll.Seconds(), countsLine(rep.Bind))
	}
	if f, b := rep.FirstCall, rep.BoundCall; f != nil && b != nil {
		fmt.Fprintf(out, "GetConsumer latency: first call (binds) p50 %v p99 %v max %v; bound p50 %v p99 %v max %v\n",
			f.P50, f.P99, f.Max, b.P50, b.P99, b.Max)
	}
	if rep.StartError != "" {
		fmt.Fprintf(out, "did not start: %s\n", rep.StartError)
	}
	if rep.Idle == nil {
		return
	}
	ws := []*ScaleWindow{rep.Idle}
	if rep.Busy != nil {
		ws = append(ws, rep.Busy)
	}
	fmt.Fprintf(out, "\n%-44s %12s %12s\n", "NATS requests a second", "idle", fmt.Sprintf("busy (%d)", busyOf(rep.Busy)))
	row := func(name string, f func(w *ScaleWindow) string) {
		cells := []string{"", ""}
		for i, w := range ws {
			cells[i] = f(w)
		}
		fmt.Fprintf(out, "%-44s %12s %12s\n", name, cells[0], cells[1])
	}
	row("total", func(w *ScaleWindow) string { return fmt.Sprintf("%.1f", w.Total) })
	kinds := map[string]bool{}
	for _, w := range ws {
		for k := range w.Requests {
			kinds[k] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		row("  "+k, func(w *ScaleWindow) string { return fmt.Sprintf("%.2f", w.Requests[k]) })
	}
	for i := range rep.Idle.Replicas {
		row(fmt.Sprintf("replica %d CPU, %% of a core", i+1), func(w *ScaleWindow) string { return fmt.Sprintf("%.2f", w.Replicas[i].CPUPct) })
		row(fmt.Sprintf("replica %d RSS, MiB", i+1), func(w *ScaleWindow) string { return fmt.Sprintf("%.1f", w.Replicas[i].RSS/(1<<20)) })
	}
	row("nats-server CPU, % of a core", func(w *ScaleWindow) string { return fmt.Sprintf("%.2f", w.NATSCPU) })
	row("messages consumed a second", func(w *ScaleWindow) string { return fmt.Sprintf("%.0f", w.Consumed) })
	fmt.Fprintf(out, "windows of %v\n", time.Duration(rep.Idle.Seconds*float64(time.Second)).Round(100*time.Millisecond))
	if per := rep.perBound(); per != nil {
		cells := make([]string, len(per))
		for i, b := range per {
			cells[i] = fmt.Sprintf("replica %d %.1f KiB (RSS %.1f MiB before)", i+1, b/(1<<10), rep.RSSBeforeBind[i]/(1<<20))
		}
		fmt.Fprintf(out, "memory per bound consumer (idle RSS less RSS before the first calls, over %d): %s\n", rep.Consumers, strings.Join(cells, ", "))
	}
}

func busyOf(w *ScaleWindow) int {
	if w == nil {
		return 0
	}
	return w.BusyConsumers
}

// countsLine is counts by kind, largest first.
func countsLine(counts map[string]int) string {
	kinds := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}
