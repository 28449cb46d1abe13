// Command jetgate serves NATS JetStream durable pull consumers over gRPC and
// REST/JSON. Every flag can also be set with an environment variable:
// --nats-url is JETGATE_NATS_URL, and so on. A configuration file
// (--config) describes any number of consumers; flags override it.
//
//	jetgate [flags]                          serve
//	jetgate check-config --config FILE [flags]
//	                                         validate, print the effective configuration
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc/grpclog"

	"github.com/jetgate/jetgate/app"
	"github.com/jetgate/jetgate/internal/config"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "check-config" {
		os.Exit(checkConfig(os.Args[2:], os.LookupEnv, os.Stdout, os.Stderr))
	}
	o, err := parse(os.Args[1:], os.LookupEnv)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0) // the usage is printed
	case errors.Is(err, errVersion):
		fmt.Println("jetgate", app.Version())
		os.Exit(0)
	case err != nil:
		fmt.Fprintln(os.Stderr, "jetgate:", err)
		os.Exit(2)
	}
	grpclog.SetLoggerV2(app.GRPCLogger(o.Logger)) // before gRPC runs: process-wide
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopProfile, err := startProfile(o.CPUProfile)
	if err == nil {
		err = app.Run(ctx, o)
		stopProfile()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "jetgate:", err)
		os.Exit(1)
	}
}

// startProfile writes a CPU profile of the whole run to file, if one is
// named (for profiling under load; off by default).
func startProfile(file string) (stop func(), err error) {
	if file == "" {
		return func() {}, nil
	}
	f, err := os.Create(file)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// checkConfig is `jetgate check-config`: it resolves the file and the flags
// as a start would, without connecting to anything, and prints the result.
// It returns the exit code: 0, or 2 for a bad file or command line.
func checkConfig(args []string, env func(string) (string, bool), stdout, stderr io.Writer) int {
	o, err := parse(args, env)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil && o.ConfigFile == "" {
		err = errors.New("give the file to check with --config FILE (or JETGATE_CONFIG)")
	}
	var cfg *config.Config
	if err == nil {
		cfg, err = config.Resolve(o.ConfigFile, o.Flags)
	}
	if err == nil {
		err = cfg.PastPause(time.Now())
	}
	if err == nil {
		for _, w := range cfg.Warnings() {
			fmt.Fprintln(stderr, "jetgate check-config: warning:", w)
		}
		err = config.Write(stdout, cfg)
	}
	if err != nil {
		fmt.Fprintln(stderr, "jetgate check-config:", err)
		return 2
	}
	return 0
}

// errVersion is parse's answer to --version.
var errVersion = errors.New("version asked")

// list is a repeatable flag.
type list []string

func (l *list) String() string { return strings.Join(*l, ",") }
func (l *list) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// fromEnv fills in from the environment what the command line left unset:
// --nats-url from JETGATE_NATS_URL.
// It returns the variables that set flags, by flag name.
func fromEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) (map[string]string, error) {
	var env map[string]string
	given := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		name := "JETGATE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := lookup(name); ok && !given[f.Name] && envErr == nil && f.Name != "version" {
			if err := fs.Set(f.Name, v); err != nil {
				envErr = fmt.Errorf("%s=%q (--%s): %w", name, v, f.Name, err)
			}
			if env == nil {
				env = make(map[string]string)
			}
			env[f.Name] = name
		}
	})
	return env, envErr
}

func parse(args []string, env func(string) (string, bool)) (app.Options, error) {
	o := app.Defaults()
	var streamSubjects, filters, onDemand list
	level := slog.LevelInfo
	fs := flag.NewFlagSet("jetgate", flag.ContinueOnError)
	fs.StringVar(&o.ConfigFile, "config", "", "configuration file (YAML); flags given explicitly override it")
	fs.StringVar(&o.NATSURL, "nats-url", "", "NATS server URL(s); empty runs an embedded JetStream server")
	fs.StringVar(&o.NATSCreds, "nats-creds", "", "NATS credentials file (JWT and seed), with --nats-url")
	fs.StringVar(&o.JSDomain, "js-domain", "", "JetStream domain to serve ($JS.<domain>.API: a hub's from a leaf node), with --nats-url")
	fs.StringVar(&o.NATSTLSCA, "nats-tls-ca", "", "CA certificate file to verify the NATS server by, with --nats-url")
	fs.StringVar(&o.NATSTLSCert, "nats-tls-cert", "", "client certificate file for NATS, with --nats-tls-key")
	fs.StringVar(&o.NATSTLSKey, "nats-tls-key", "", "client key file for NATS, with --nats-tls-cert")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "store directory of the embedded server")
	fs.StringVar(&o.NATSListen, "nats-listen", o.NATSListen, "client address of the embedded server")
	fs.StringVar(&o.Stream, "stream", o.Stream, "stream of the durable consumer")
	fs.Var(&streamSubjects, "stream-subjects", "create the stream with these subjects if it is missing (repeatable or comma-separated; embedded default <stream in lower case>.>)")
	fs.StringVar(&o.Consumer, "consumer", o.Consumer, "durable consumer to create or update and serve")
	fs.Var(&filters, "filter-subject", "filter subject of the consumer (repeatable)")
	fs.Var(&onDemand, "on-demand", "serve existing consumers on their first call: STREAM/CONSUMER glob patterns such as 'ORDERS/team-*' (repeatable or comma-separated); without --consumer, no consumer of the flags' own")
	fs.Var(durationFlag{&o.AckWait}, "ack-wait", "consumer ack_wait")
	fs.Var(intFlag[int]{&o.MaxAckPending}, "max-ack-pending", "consumer max_ack_pending")
	fs.StringVar(&o.DeliverPolicy, "deliver-policy", o.DeliverPolicy, "all | last | new | by_start_sequence | by_start_time | last_per_subject")
	fs.Var(intFlag[uint64]{&o.StartSeq}, "start-seq", "start sequence, with --deliver-policy by_start_sequence")
	fs.StringVar(&o.StartTime, "start-time", "", "start time (RFC 3339), with --deliver-policy by_start_time")
	fs.StringVar(&o.GRPCAddr, "grpc-addr", o.GRPCAddr, "gRPC listen address")
	fs.StringVar(&o.HTTPAddr, "http-addr", o.HTTPAddr, "REST listen address")
	fs.StringVar(&o.TokenKeyFile, "token-key-file", "", "token keys, one secret (32+ bytes) per line, the first signs; empty: a random key per process")
	fs.Var(intFlag[int]{&o.MaxBatch}, "max-batch", "largest Fetch batch")
	fs.Var(durationFlag{&o.MaxExpires}, "max-expires", "longest Fetch expires")
	fs.Var(intFlag[int64]{&o.MaxBodyBytes}, "max-body-bytes", "largest REST request body")
	fs.Var(intFlag[int64]{&o.MaxFetchBytes}, "max-fetch-bytes", "most bytes of messages one Fetch pulls and returns")
	fs.Var(boolFlag{&o.AllowUnauthenticated}, "allow-unauthenticated", "serve listeners beyond loopback without authentication")
	fs.Var(boolFlag{&o.Metrics}, "metrics", "serve GET /metrics")
	fs.Var(boolFlag{&o.Reflection}, "reflection", "serve gRPC reflection")
	fs.Var(logLevel{&level}, "log-level", "debug | info | warn | error")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (profiling under load)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage:\n  jetgate [flags]                            serve\n"+
			"  jetgate check-config --config FILE [flags] validate, print the effective configuration\n"+
			"Every flag can be set from the environment: --nats-url is JETGATE_NATS_URL.\n\nFlags:\n")
		fs.PrintDefaults()
	}

	// The flag package would print its own wording of an error, and the
	// usage after it: the caller prints ours, and the usage is for --help.
	out := fs.Output()
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(out)
			fs.Usage()
		}
		return o, flagError(err)
	}
	if *showVersion {
		return o, errVersion
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q: every setting is a --flag", fs.Arg(0))
	}
	var err error
	if o.Env, err = fromEnv(fs, env); err != nil {
		return o, err
	}
	// What was given, on the command line or in the environment, overrides
	// the configuration file.
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "config" || f.Name == "log-level" || f.Name == "cpuprofile" || f.Name == "version" {
			return
		}
		if o.Given == nil {
			o.Given = make(map[string]bool)
		}
		o.Given[f.Name] = true
	})
	o.StreamSubjects, o.FilterSubjects, o.OnDemand = streamSubjects, filters, onDemand
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	return o, nil
}
