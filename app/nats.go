package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/embedded"
	"github.com/jetgate/jetgate/internal/token"
)

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// dialAddr turns a listener address into one to dial: an unspecified host
// becomes loopback.
func dialAddr(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

func loadKeys(path string, log *slog.Logger) (*token.Keyring, error) {
	if path != "" {
		return token.LoadKeyring(path)
	}
	log.Warn("no --token-key-file: using a random token key, so tokens live and die with this process and replicas cannot settle each other's leases")
	return token.RandomKeyring(), nil
}

func startEmbedded(o Options, log *slog.Logger) (*natsserver.Server, error) {
	host, portStr, err := net.SplitHostPort(o.NATSListen)
	if err != nil {
		return nil, fmt.Errorf("--nats-listen %q: give host:port: %w", o.NATSListen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("--nats-listen %q: bad port", o.NATSListen)
	}
	if o.DataDir == "" {
		return nil, errors.New("--data-dir: the embedded server needs a directory for its store")
	}
	ns, err := embedded.Start(embedded.Options{Name: "jetgate-embedded", Host: host, Port: port, StoreDir: o.DataDir})
	if err != nil {
		return nil, fmt.Errorf("--nats-listen %s: %w", o.NATSListen, err)
	}
	log.Info("embedded NATS JetStream started", "url", ns.ClientURL(), "store", o.DataDir)
	return ns, nil
}

// ensureStream creates the stream with the given subjects if it is missing.
func ensureStream(ctx context.Context, nc *nats.Conn, name string, subjects []string, log *slog.Logger) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	_, err = js.Stream(ctx, name)
	if err == nil {
		return nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("look up stream %q: %w", name, err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: subjects}); err != nil {
		return fmt.Errorf("--stream-subjects: create stream %q with subjects %v: %w", name, subjects, err)
	}
	log.Info("created stream", "stream", name, "subjects", subjects)
	return nil
}
