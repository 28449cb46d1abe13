// Command jetgate-bench measures Fetch+Ack throughput over gRPC and REST,
// against a jetgate it starts in-process or one given by --grpc-addr and
// --http-addr.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/jetgate/jetgate/bench"
)

func main() {
	o := bench.Options{Out: os.Stdout}
	var modes string
	flag.StringVar(&o.GRPCAddr, "grpc-addr", "", "gRPC address of a running jetgate; empty starts one in-process")
	flag.StringVar(&o.HTTPAddr, "http-addr", "", "REST address of that jetgate")
	flag.StringVar(&o.Stream, "stream", "ORDERS", "stream")
	flag.StringVar(&o.Consumer, "consumer", "billing", "consumer")
	flag.StringVar(&o.Subject, "subject", "orders.bench", "subject to publish to")
	flag.IntVar(&o.Messages, "messages", 20000, "messages per mode")
	flag.IntVar(&o.Batch, "batch", 100, "Fetch batch and Ack size")
	flag.IntVar(&o.Workers, "workers", 4, "concurrent Fetch+Ack loops")
	flag.IntVar(&o.Size, "size", 128, "payload bytes")
	flag.StringVar(&modes, "modes", "grpc,rest,consume", "comma-separated: grpc, rest, consume (a Consume stream per worker, acked by batch)")
	flag.DurationVar(&o.Soak, "soak", 0, "run a soak of this length instead (publish at --rate, sample /metrics every --every)")
	flag.IntVar(&o.Rate, "rate", 1000, "soak: messages published per second")
	flag.DurationVar(&o.Every, "every", 5*time.Second, "soak: sampling interval")
	flag.Parse()
	o.Modes = strings.Split(modes, ",")
	if o.GRPCAddr != "" && o.HTTPAddr == "" && (strings.Contains(modes, "rest") || o.Soak > 0) {
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
