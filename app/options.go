package app

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/gateway"
	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/core"
	"github.com/jetgate/jetgate/internal/natsname"
)

// Options is everything a jetgate process is configured with. Field names
// follow the flags (--nats-url is NATSURL).
type Options struct {
	NATSURL        string
	NATSCreds      string // credentials file (JWT and seed) for --nats-url
	NATSTLSCA      string // CA certificate(s) to verify the NATS server by
	NATSTLSCert    string // client certificate, for servers that ask for one
	NATSTLSKey     string
	DataDir        string
	NATSListen     string
	Stream         string
	StreamSubjects []string
	Consumer       string
	FilterSubjects []string
	AckWait        time.Duration
	MaxAckPending  int
	DeliverPolicy  string
	StartSeq       uint64
	StartTime      string
	GRPCAddr       string
	HTTPAddr       string
	TokenKeyFile   string
	MaxBatch       int
	MaxExpires     time.Duration
	MaxBodyBytes   int64
	MaxFetchBytes  int64
	ShutdownGrace  time.Duration
	Logger         *slog.Logger

	// Started, if set, is called with the bound addresses once serving.
	Started func(Addrs)
}

// Addrs are the addresses a running process listens on.
type Addrs struct {
	GRPC string
	HTTP string
	NATS string // the embedded server's client URL; "" when remote
}

// Defaults, as the flags document them.
func Defaults() Options {
	return Options{
		DataDir:       "jetgate-data",
		NATSListen:    "127.0.0.1:4222",
		Stream:        "ORDERS",
		Consumer:      "billing",
		AckWait:       30 * time.Second,
		MaxAckPending: 1024,
		DeliverPolicy: "all",
		GRPCAddr:      ":9090",
		HTTPAddr:      ":8080",
		MaxBatch:      core.DefaultMaxBatch,
		MaxExpires:    core.DefaultMaxExpires,
		MaxBodyBytes:  gateway.DefaultMaxBodyBytes,
		MaxFetchBytes: consumer.DefaultMaxFetchBytes,
		ShutdownGrace: 10 * time.Second,
	}
}

var deliverPolicies = map[string]jetstream.DeliverPolicy{
	"all":               jetstream.DeliverAllPolicy,
	"last":              jetstream.DeliverLastPolicy,
	"new":               jetstream.DeliverNewPolicy,
	"by_start_sequence": jetstream.DeliverByStartSequencePolicy,
	"by_start_time":     jetstream.DeliverByStartTimePolicy,
	"last_per_subject":  jetstream.DeliverLastPerSubjectPolicy,
}

// consumerConfig checks the consumer options; errors name the flag.
func (o Options) consumerConfig() (consumer.Config, error) {
	c := consumer.Config{
		Stream:         o.Stream,
		Name:           o.Consumer,
		FilterSubjects: o.FilterSubjects,
		AckWait:        o.AckWait,
		MaxAckPending:  o.MaxAckPending,
	}
	switch {
	case natsname.Check("--stream", o.Stream) != nil:
		return c, natsname.Check("--stream", o.Stream)
	case natsname.Check("--consumer", o.Consumer) != nil:
		return c, natsname.Check("--consumer", o.Consumer)
	case o.AckWait < time.Second:
		return c, fmt.Errorf("--ack-wait %v: must be at least 1s", o.AckWait)
	case o.MaxAckPending < 1:
		return c, fmt.Errorf("--max-ack-pending %d: must be at least 1", o.MaxAckPending)
	case o.MaxBatch < 1:
		return c, fmt.Errorf("--max-batch %d: must be at least 1", o.MaxBatch)
	case o.MaxExpires < time.Second:
		return c, fmt.Errorf("--max-expires %v: must be at least 1s", o.MaxExpires)
	case o.MaxFetchBytes < 1<<10 || o.MaxFetchBytes > 64<<20:
		return c, fmt.Errorf("--max-fetch-bytes %d: must be between 1 KiB and 64 MiB (the default, %d, fits a default gRPC client's 4 MiB)", o.MaxFetchBytes, consumer.DefaultMaxFetchBytes)
	}
	for _, f := range o.FilterSubjects {
		if f == "" || strings.ContainsAny(f, " \t") {
			return c, fmt.Errorf("--filter-subject %q: not a valid subject", f)
		}
	}
	p, ok := deliverPolicies[o.DeliverPolicy]
	if !ok {
		return c, fmt.Errorf("--deliver-policy %q: use one of all, last, new, by_start_sequence, by_start_time, last_per_subject", o.DeliverPolicy)
	}
	c.DeliverPolicy = &p
	if p == jetstream.DeliverLastPerSubjectPolicy && len(o.FilterSubjects) == 0 {
		return c, errors.New("--deliver-policy last_per_subject needs --filter-subject (the server requires one)")
	}
	switch {
	case p == jetstream.DeliverByStartSequencePolicy:
		if o.StartSeq == 0 {
			return c, errors.New("--deliver-policy by_start_sequence needs --start-seq (1 or more)")
		}
		c.OptStartSeq = o.StartSeq
	case o.StartSeq != 0:
		return c, errors.New("--start-seq goes with --deliver-policy by_start_sequence")
	}
	switch {
	case p == jetstream.DeliverByStartTimePolicy:
		t, err := time.Parse(time.RFC3339Nano, o.StartTime)
		if err != nil {
			return c, fmt.Errorf("--start-time %q: give an RFC 3339 time, such as 2026-01-02T15:04:05Z (needed by --deliver-policy by_start_time)", o.StartTime)
		}
		c.OptStartTime = &t
	case o.StartTime != "":
		return c, errors.New("--start-time goes with --deliver-policy by_start_time")
	}
	return c, nil
}

// natsSecurity checks the credential and TLS files and turns them into
// connection options; errors name the flag.
func (o Options) natsSecurity() ([]nats.Option, error) {
	var opts []nats.Option
	for _, f := range []struct{ flag, path string }{
		{"--nats-creds", o.NATSCreds}, {"--nats-tls-ca", o.NATSTLSCA},
		{"--nats-tls-cert", o.NATSTLSCert}, {"--nats-tls-key", o.NATSTLSKey},
	} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return nil, fmt.Errorf("%s %s: %w", f.flag, f.path, err)
		}
	}
	if o.NATSCreds != "" {
		opts = append(opts, nats.UserCredentials(o.NATSCreds))
	}
	if o.NATSTLSCA != "" {
		opts = append(opts, nats.RootCAs(o.NATSTLSCA))
	}
	switch {
	case o.NATSTLSCert != "" && o.NATSTLSKey != "":
		opts = append(opts, nats.ClientCert(o.NATSTLSCert, o.NATSTLSKey))
	case o.NATSTLSCert != "" || o.NATSTLSKey != "":
		return nil, errors.New("--nats-tls-cert and --nats-tls-key go together")
	}
	return opts, nil
}
