package app

import (
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats.go"

	"go.opentelemetry.io/otel/trace"

	"github.com/jetgate/jetgate/internal/config"
)

// Options is everything a jetgate process is configured with: a
// configuration file, the flags (field names follow them: --nats-url is
// NATSURL), and what only a program sets.
type Options struct {
	// ConfigFile is the configuration file (--config); "" runs on the flags
	// alone, as one consumer.
	ConfigFile string
	// Flags override the file where Flags.Given names them; with no file
	// they are the whole configuration (config.Resolve).
	config.Flags

	ShutdownGrace time.Duration
	Logger        *slog.Logger
	// TracerProvider, if set, records the spans (tests); else the OTEL_*
	// variables say whether and where (DESIGN section 12).
	TracerProvider trace.TracerProvider
	// CPUProfile names the file cmd/jetgate writes a CPU profile of the run
	// to (--cpuprofile); Run itself does not profile.
	CPUProfile string

	// Started, if set, is called with the bound addresses once serving.
	Started func(Addrs)
	// StreamsPerConnection caps the RPCs one gRPC caller's connection runs
	// at once; 0 is 1024. Tests lower it to prove a cap without opening a
	// thousand connections.
	StreamsPerConnection uint32
	// ConsumeWriteStall bounds how long one response of a Consume stream,
	// REST or gRPC, waits for its caller to read; 0 is 30s. Tests shorten
	// it.
	ConsumeWriteStall time.Duration
}

// Addrs are the addresses a running process listens on.
type Addrs struct {
	GRPC string
	HTTP string
	NATS string // the embedded server's client URL; "" when remote or in-process only
}

// Defaults, as the flags document them.
func Defaults() Options {
	return Options{
		Flags:         config.DefaultFlags(),
		ShutdownGrace: 10 * time.Second,
	}
}

// natsSecurity checks the credential and TLS files and turns them into
// connection options; errors name the field (or flag).
func natsSecurity(c *config.Config) ([]nats.Option, error) {
	var opts []nats.Option
	for _, f := range []struct{ path, file string }{
		{"nats.creds", c.NATS.Creds}, {"nats.tls.ca", c.NATS.TLS.CA},
		{"nats.tls.cert", c.NATS.TLS.Cert}, {"nats.tls.key", c.NATS.TLS.Key},
	} {
		if f.file == "" {
			continue
		}
		if _, err := os.Stat(f.file); err != nil {
			return nil, c.Errorf(f.path, "%v", err)
		}
	}
	if c.NATS.Creds != "" {
		opts = append(opts, nats.UserCredentials(c.NATS.Creds))
	}
	if c.NATS.TLS.CA != "" {
		opts = append(opts, nats.RootCAs(c.NATS.TLS.CA))
	}
	if c.NATS.TLS.Cert != "" { // Validate saw to it that the key goes with it
		opts = append(opts, nats.ClientCert(c.NATS.TLS.Cert, c.NATS.TLS.Key))
	}
	return opts, nil
}
