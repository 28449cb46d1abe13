// Package bench measures jetgate next to nats.go on the same NATS server in
// one run: the same workload consumed directly with nats.go (the ceiling and
// a careful native client) and through jetgate's gRPC Fetch, REST Fetch and
// gRPC Consume. It starts jetgate in-process (embedded NATS on a loopback
// port, random gRPC and HTTP ports) or uses one already running.
package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/app"
)

// The modes, in the order of the table: (a) to (e).
const (
	ModeNATS       = "nats"        // nats.go Fetch(batch) + fire-and-forget Ack
	ModeNATSDouble = "nats-double" // nats.go Fetch(batch) + DoubleAck
	ModeGRPC       = "grpc"        // jetgate gRPC Fetch(batch) + Ack(batch)
	ModeREST       = "rest"        // jetgate REST fetch + ack
	ModeConsume    = "consume"     // jetgate gRPC Consume + unary Ack(batch)
	ModePush       = "push"        // a jetgate replica process pushing to an endpoint process
)

// AllModes are the modes a default run measures.
var AllModes = []string{ModeNATS, ModeNATSDouble, ModeGRPC, ModeREST, ModeConsume, ModePush, ModeFloor, ModeFloorConsume, ModePushFloor}

// Options configure a run.
type Options struct {
	// GRPCAddr and HTTPAddr name a running jetgate; empty starts one.
	GRPCAddr string
	HTTPAddr string
	// NATSURL is the NATS server the nats modes consume from and the bench
	// publishes to; it is the embedded server's when the bench starts
	// jetgate. With a running jetgate and no URL, messages are published
	// through jetgate and the nats modes cannot run.
	NATSURL  string
	Stream   string
	Consumer string
	// Subject is what jetgate's consumer takes; the nats modes publish to
	// Subject.<mode> and consume through durables of their own.
	Subject  string
	Messages int // per mode
	Batch    int
	Workers  int
	Size     int
	Samples  int // Fetch(1) latency samples per mode
	// PushConcurrency is the push mode's requests in flight; 0 is
	// DefaultPushConcurrency.
	PushConcurrency int
	// PushHTTP2 has push and push-floor speak h2c (HTTP/2 with prior
	// knowledge) to the endpoint rather than HTTP/1.1.
	PushHTTP2 bool
	// PushBatch, if set, has push and push-floor send up to that many
	// messages a request (push.batch.max_messages, max_wait 20ms).
	PushBatch int
	// InProcess runs jetgate and its NATS server in the bench's process;
	// by default (no GRPCAddr) each runs as a process of its own, as
	// deployed: NATS a child of the bench, jetgate the built binary.
	InProcess bool
	// Jetgate is the jetgate binary the deployed shape runs; empty builds
	// cmd/jetgate.
	Jetgate string

	given bool // GRPCAddr named a running jetgate
	// natsPID and jetgatePID are the deployed shape's processes, whose CPU
	// each mode reads; 0 in process.
	natsPID, jetgatePID int
	// Rounds runs every mode that many times, in turn, and reports each
	// figure's median: a burst of other work on the machine then skews one
	// round of one mode, not the table.
	Rounds int
	Modes  []string
	Out    io.Writer
	// JSON, if set, is a file the report is written to as JSON.
	JSON string
	// CPUProfile, if set, names the CPU profiles: one per mode, covering its
	// timed part, with the mode before the extension (cpu.out: cpu.grpc.out).
	CPUProfile string
	// BlockProfile and MutexProfile, if set, name a block and a mutex
	// profile of the push modes' pusher processes, each over its whole run
	// (block.out: block.pusher.out, block.pusher-floor.out).
	BlockProfile string
	MutexProfile string

	// Soak, when set, runs a soak of that length instead of the modes:
	// Rate messages a second, the gateway's /metrics sampled Every.
	Soak  time.Duration
	Rate  int
	Every time.Duration
	// SoakReplicas is how many jetgate processes a deployed soak runs (0 is
	// 1), on one consumer and with one token key; publishes go to each in
	// turn.
	SoakReplicas int
	// SoakLibraries, if set, has a soak consumed by one subscriber process
	// per client library named (LibraryPython, LibraryTS), subscriber i
	// talking to replica i mod SoakReplicas, instead of the bench's own
	// Fetch+Ack workers.
	SoakLibraries []string

	// Waiting, when set, runs the waiting measurement instead of the modes:
	// that many long-polling Fetch(1) callers spread over each count of
	// Replicas in turn, every replica a process of its own (RunWaiting).
	Waiting  int
	Replicas []int
	// Scale, when set, runs the scale measurement instead of the modes:
	// that many consumers behind ScaleReplicas jetgate processes, idle for
	// ScaleIdle, then ScaleBusy of them in Fetch+Ack loops as long
	// (RunScale). ScaleOnDemand has them created with nats.go and served
	// on demand rather than listed in the file.
	Scale         int
	ScaleReplicas int
	ScaleIdle     time.Duration
	ScaleBusy     int
	ScaleOnDemand bool
	// ReplicaCommand runs one replica process; empty runs this program
	// again, which Run turns into a replica when ReplicaEnv is set.
	ReplicaCommand []string
}

// Run measures each mode in turn (o.Rounds times), prints the table and,
// with o.JSON, writes it as JSON too.
func Run(ctx context.Context, o Options) (Report, error) {
	if cfg, ok := os.LookupEnv(ReplicaEnv); ok {
		return Report{}, serveReplica(ctx, cfg, os.Stdin, os.Stdout)
	}
	if _, ok := os.LookupEnv(EndpointEnv); ok {
		return Report{}, serveEndpoint(os.Stdin, os.Stdout)
	}
	if dir, ok := os.LookupEnv(NATSEnv); ok {
		return Report{}, serveNATS(dir, os.Stdin, os.Stdout)
	}
	if cfg, ok := os.LookupEnv(FloorEnv); ok {
		return Report{}, serveFloor(ctx, cfg, os.Stdin, os.Stdout)
	}
	if cfg, ok := os.LookupEnv(PushFloorEnv); ok {
		return Report{}, servePushFloor(ctx, cfg, os.Stdin, os.Stdout)
	}
	if o.Scale > 0 {
		_, err := RunScale(ctx, o)
		return Report{}, err
	}
	if o.Waiting > 0 {
		_, err := RunWaiting(ctx, o)
		return Report{}, err
	}
	if o.Soak > 0 {
		_, err := RunSoak(ctx, o)
		return Report{}, err
	}
	o.given = o.GRPCAddr != ""
	switch {
	case o.given:
	case o.InProcess:
		stop, addrs, err := startJetgate(ctx, o)
		if err != nil {
			return Report{}, err
		}
		defer stop()
		o.GRPCAddr, o.HTTPAddr, o.NATSURL = addrs.GRPC, addrs.HTTP, addrs.NATS
	default:
		d, err := startDeployed(ctx, o, 1)
		if err != nil {
			return Report{}, err
		}
		defer d.stop()
		o.GRPCAddr, o.HTTPAddr, o.NATSURL = d.jetgates[0].grpc, d.jetgates[0].http, d.natsURL
		o.natsPID, o.jetgatePID = d.nats.cmd.Process.Pid, d.jetgates[0].cmd.Process.Pid
	}
	conn, err := grpc.NewClient(o.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return Report{}, err
	}
	defer conn.Close()
	cons := jetgatev1.NewConsumerServiceClient(conn)
	strm := jetgatev1.NewStreamServiceClient(conn)

	var pub publisher = gatewayPublisher{strm: strm, o: o}
	var js jetstream.JetStream // to watch jetgate's consumer, when the bench may
	if o.NATSURL != "" {
		nc, err := nats.Connect(o.NATSURL, nats.Name("jetgate-bench"))
		if err != nil {
			return Report{}, fmt.Errorf("connect to NATS: %w", err)
		}
		defer nc.Close()
		if pub, err = newNATSPublisher(nc, o); err != nil {
			return Report{}, err
		}
		if js, err = jetstream.New(nc); err != nil {
			return Report{}, err
		}
	}
	rep := newReport(o)
	fmt.Fprintln(o.Out, rep.header())
	for round := range rep.Workload.Rounds {
		for _, name := range o.Modes {
			m, subject, err := newMode(ctx, name, cons, js, o)
			if err != nil {
				return rep, err
			}
			r, err := measure(ctx, name, m, subject, pub, o)
			m.close()
			if err != nil {
				return rep, fmt.Errorf("%s: %w", name, err)
			}
			r.Round = round + 1
			fmt.Fprintln(o.Out, r.progress())
			rep.Rounds = append(rep.Rounds, r)
		}
	}
	rep.summarise(o.Modes)
	rep.compare()
	fmt.Fprintln(o.Out)
	rep.print(o.Out)
	if o.JSON != "" {
		if err := rep.writeJSON(o.JSON); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// newMode sets up one mode and says where its messages are published.
func newMode(ctx context.Context, name string, cons jetgatev1.ConsumerServiceClient, js jetstream.JetStream, o Options) (mode, string, error) {
	switch name {
	case ModeNATS, ModeNATSDouble:
		if o.NATSURL == "" {
			return nil, "", fmt.Errorf("the %s mode needs --nats-url with a running jetgate", name)
		}
		subject := o.Subject + "." + name
		m, err := newNATSMode(ctx, name, subject, o)
		return m, subject, err
	case ModeGRPC, ModeREST, ModeConsume:
		return newGatewayMode(name, cons, js, o), o.Subject, nil
	case ModePush, ModePushFloor:
		subject := o.Subject + "." + name
		m, err := newPushMode(ctx, name, js, subject, o)
		return m, subject, err
	case ModeFloor, ModeFloorConsume:
		kind := ModeGRPC
		if name == ModeFloorConsume {
			kind = ModeConsume
		}
		subject := o.Subject + "." + name
		m, err := newFloorMode(ctx, name, kind, subject, js, o)
		return m, subject, err
	}
	return nil, "", fmt.Errorf("unknown mode %q: use %s", name, strings.Join(AllModes, ", "))
}

// startJetgate runs jetgate in this process with its embedded NATS server
// listening on a loopback port (the nats modes connect to it), gRPC and
// HTTP on random ports. Its consumer takes Subject only, so that the nats
// modes' messages (Subject.<mode>) are theirs alone. The stream keeps a
// mode's worth of messages (at least streamMaxMsgs), and a soak's stream
// streamMaxMsgs, so that a soak measures the gateway, not a growing store.
func startJetgate(ctx context.Context, o Options) (func(), app.Addrs, error) {
	dir, err := os.MkdirTemp("", "jetgate-bench-")
	if err != nil {
		return nil, app.Addrs{}, err
	}
	opts := app.Defaults()
	opts.DataDir = dir
	opts.NATSListen = "127.0.0.1:-1"
	opts.GRPCAddr, opts.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	opts.Stream, opts.Consumer = o.Stream, o.Consumer
	opts.StreamSubjects = streamSubjects(o)
	opts.FilterSubjects = []string{o.Subject}
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := app.Start(ctx, opts)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, app.Addrs{}, err
	}
	stop := func() {
		_ = p.Stop()
		_ = os.RemoveAll(dir)
	}
	if err := capStream(ctx, p.NATS, o); err != nil {
		stop()
		return nil, app.Addrs{}, err
	}
	return stop, p.Addrs, nil
}

func streamSubjects(o Options) []string { return []string{o.Subject, o.Subject + ".>"} }

const streamMaxMsgs = 10_000

// capStream creates the bench's stream, or updates it, with its subjects
// and cap.
func capStream(ctx context.Context, url string, o Options) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	limit := max(streamMaxMsgs, o.Messages)
	if o.Soak > 0 {
		limit = streamMaxMsgs
	}
	_, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: o.Stream, Subjects: streamSubjects(o), MaxMsgs: int64(limit)})
	return err
}
