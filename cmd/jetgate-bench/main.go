// Command jetgate-bench measures jetgate next to nats.go on the same NATS
// server in one run: nats.go Fetch with fire-and-forget Ack and with
// DoubleAck, jetgate's gRPC Fetch+Ack, REST, Consume and push, and the
// floors: a pass-through gateway and a pass-through pusher. By default it runs them as deployed: a NATS
// server and jetgate (the built binary) as processes of their own;
// --in-process runs both in the bench's process, and --grpc-addr and
// --http-addr measure a running jetgate. With --waiting it measures
// long-polling Fetch callers over replica processes; with --scale-consumers
// what many consumers cost, idle and busy, behind replica processes. With
// --soak it publishes at a fixed rate for that long and samples each jetgate
// replica's /metrics (--soak-replicas of them), consumed by its own workers
// or by the client libraries' subscribers (--soak-libraries).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jetgate/jetgate/bench"
)

func main() {
	o := bench.Options{Out: os.Stdout}
	var modes, replicas, scaleSource, soakLibraries string
	flag.StringVar(&o.GRPCAddr, "grpc-addr", "", "gRPC address of a running jetgate; empty starts NATS and jetgate as processes of their own (or, with --in-process, in this one)")
	flag.BoolVar(&o.InProcess, "in-process", false, "run NATS and jetgate in the bench's own process rather than as deployed")
	flag.StringVar(&o.Jetgate, "jetgate", "", "the jetgate binary the deployed shape runs; empty builds ./cmd/jetgate")
	flag.StringVar(&o.HTTPAddr, "http-addr", "", "REST address of that jetgate")
	flag.StringVar(&o.NATSURL, "nats-url", "", "NATS server of that jetgate, for the nats modes and for publishing")
	flag.StringVar(&o.Stream, "stream", "ORDERS", "stream")
	flag.StringVar(&o.Consumer, "consumer", "billing", "jetgate's consumer")
	flag.StringVar(&o.Subject, "subject", "orders.bench", "subject jetgate's consumer takes; the nats modes use <subject>.<mode>")
	flag.IntVar(&o.Messages, "messages", 100000, "messages per mode")
	flag.IntVar(&o.Batch, "batch", 100, "Fetch batch and Ack size")
	flag.IntVar(&o.Workers, "workers", 4, "concurrent Fetch+Ack loops")
	flag.IntVar(&o.Size, "size", 1024, "payload bytes")
	flag.IntVar(&o.Samples, "samples", 200, "Fetch(1) latency samples per mode")
	flag.IntVar(&o.Rounds, "rounds", 1, "run every mode this many times, in turn, and report medians")
	flag.IntVar(&o.PushConcurrency, "push-concurrency", bench.DefaultPushConcurrency, "push and push-floor: requests in flight")
	flag.BoolVar(&o.PushHTTP2, "push-http2", false, "push and push-floor: speak h2c (HTTP/2 with prior knowledge) to the endpoint rather than HTTP/1.1")
	flag.IntVar(&o.PushBatch, "push-batch", 0, "push and push-floor: up to this many messages a request (push.batch, max_wait 20ms); 0 sends one a request")
	flag.StringVar(&modes, "modes", strings.Join(bench.AllModes, ","), "comma-separated modes: "+strings.Join(bench.AllModes, ", "))
	flag.StringVar(&o.JSON, "json", "", "also write the report to this file as JSON")
	flag.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of each mode's timed part (cpu.out: cpu.grpc.out, ...), and of the deployed jetgate process (cpu.jetgate.out)")
	flag.StringVar(&o.BlockProfile, "blockprofile", "", "write a block profile of the push modes' pusher processes, over their whole run (block.out: block.pusher.out, block.pusher-floor.out)")
	flag.StringVar(&o.MutexProfile, "mutexprofile", "", "write a mutex profile of the push modes' pusher processes, over their whole run (mutex.out: mutex.pusher.out, mutex.pusher-floor.out)")
	flag.DurationVar(&o.Soak, "soak", 0, "run a soak of this length instead (publish at --rate, sample /metrics every --every)")
	flag.IntVar(&o.Rate, "rate", 1000, "soak: messages published per second")
	flag.DurationVar(&o.Every, "every", 5*time.Second, "soak: sampling interval")
	flag.IntVar(&o.SoakReplicas, "soak-replicas", 1, "soak: jetgate processes of the deployed shape, on one consumer with one token key; publishes go to each in turn")
	flag.StringVar(&soakLibraries, "soak-libraries", "", "soak: consume with one subscriber process per client library listed ("+bench.LibraryPython+", "+bench.LibraryTS+"), subscriber i through replica i mod --soak-replicas; empty: the bench's own Fetch+Ack workers")
	flag.IntVar(&o.Waiting, "waiting", 0, "measure this many concurrent long-polling Fetch(1) callers instead, over --replicas")
	flag.StringVar(&replicas, "replicas", "3", "with --waiting: comma-separated replica counts, each run in turn (3,10)")
	flag.IntVar(&o.Scale, "scale-consumers", 0, "measure what this many consumers cost instead: idle, then busy, behind --scale-replicas jetgate processes")
	flag.IntVar(&o.ScaleReplicas, "scale-replicas", 2, "with --scale-consumers: jetgate replica processes")
	flag.DurationVar(&o.ScaleIdle, "scale-idle", 20*time.Second, "with --scale-consumers: the length of the idle window, and of the busy one")
	flag.IntVar(&o.ScaleBusy, "scale-busy", 4, "with --scale-consumers: consumers in Fetch+Ack loops in the busy window")
	flag.StringVar(&scaleSource, "scale-source", "config", "with --scale-consumers: config (the consumers in the file) or on-demand (created with nats.go, served by on_demand)")
	flag.Parse()
	if o.PushBatch < 0 || o.PushBatch > 1000 {
		fmt.Fprintf(os.Stderr, "jetgate-bench: --push-batch %d: want 0 (one message a request) to 1000\n", o.PushBatch)
		os.Exit(2)
	}
	switch scaleSource {
	case "config":
	case "on-demand":
		o.ScaleOnDemand = true
	default:
		fmt.Fprintf(os.Stderr, "jetgate-bench: --scale-source %q: want config or on-demand\n", scaleSource)
		os.Exit(2)
	}
	for _, r := range strings.Split(replicas, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(r))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "jetgate-bench: --replicas %q: want comma-separated counts of at least 1\n", replicas)
			os.Exit(2)
		}
		o.Replicas = append(o.Replicas, n)
	}
	if soakLibraries != "" {
		for _, l := range strings.Split(soakLibraries, ",") {
			o.SoakLibraries = append(o.SoakLibraries, strings.TrimSpace(l))
		}
	}
	switch {
	case o.SoakReplicas < 1:
		fmt.Fprintf(os.Stderr, "jetgate-bench: --soak-replicas %d: want 1 or more\n", o.SoakReplicas)
		os.Exit(2)
	case o.Soak == 0 && (o.SoakReplicas > 1 || o.SoakLibraries != nil):
		fmt.Fprintln(os.Stderr, "jetgate-bench: --soak-replicas and --soak-libraries need --soak")
		os.Exit(2)
	case o.SoakReplicas > 1 && (o.GRPCAddr != "" || o.InProcess):
		fmt.Fprintln(os.Stderr, "jetgate-bench: --soak-replicas above 1 starts the replicas as processes: not with --grpc-addr or --in-process")
		os.Exit(2)
	}
	o.Modes = strings.Split(modes, ",")
	if o.GRPCAddr != "" && o.HTTPAddr == "" && (slices.Contains(o.Modes, bench.ModeREST) || o.Soak > 0) {
		fmt.Fprintln(os.Stderr, "jetgate-bench: --http-addr is needed with --grpc-addr for the rest mode and for --soak")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := bench.Run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "jetgate-bench:", err)
		os.Exit(1)
	}
}
