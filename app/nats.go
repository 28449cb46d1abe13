package app

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/jetgate/jetgate/internal/config"
	"github.com/jetgate/jetgate/internal/embedded"
	"github.com/jetgate/jetgate/internal/keycheck"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// loadKeys loads the token key files, or makes a random key if there are
// none.
func loadKeys(c *config.Config, log *slog.Logger) (*token.Keyring, error) {
	if files := c.Tokens.KeyFiles; len(files) > 0 {
		kr, err := token.LoadKeyringFiles(files...)
		if err != nil {
			return nil, c.Errorf("tokens.key_files", "%v", err)
		}
		return kr, nil
	}
	log.Warn("no token key file (tokens.key_files, --token-key-file): using a random token key, so tokens live and die with this process and replicas cannot settle each other's leases")
	return token.RandomKeyring(), nil
}

// startEmbedded runs the embedded server: with a client listener when
// embedded.listen names one, else for in-process connections only.
func startEmbedded(c *config.Config, log *slog.Logger) (*natsserver.Server, []nats.Option, error) {
	o := embedded.Options{Name: "jetgate-embedded", StoreDir: c.Embedded.DataDir, DontListen: c.Embedded.Listen == ""}
	if listen := c.Embedded.Listen; listen != "" {
		host, portStr, _ := net.SplitHostPort(listen) // Validate checked both
		o.Host = host
		o.Port, _ = strconv.Atoi(portStr)
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			// Beyond loopback, nobody gets in without the credentials that
			// jetgate makes now and tells its operator.
			o.User, o.Password = "jetgate", rand.Text()
		}
	}
	ns, err := embedded.Start(o)
	if err != nil {
		if o.DontListen {
			return nil, nil, c.Errorf("embedded.data_dir", "%v", err)
		}
		return nil, nil, c.Errorf("embedded.listen", "%s: %v", c.Embedded.Listen, err)
	}
	var opts []nats.Option
	if o.User != "" {
		opts = append(opts, nats.UserInfo(o.User, o.Password))
		log.Warn("embedded NATS takes clients beyond loopback; they must authenticate", "listen", c.Embedded.Listen,
			"user", o.User, "password", o.Password)
	}
	log.Info("embedded NATS JetStream started", "listen", firstNonEmpty(c.Embedded.Listen, "in-process only"), "store", c.Embedded.DataDir)
	return ns, opts, nil
}

// ensureStreams creates each configured stream that is missing. One that
// exists is left as it is, with a warning if its subjects differ.
func ensureStreams(ctx context.Context, js jetstream.JetStream, c *config.Config, log *slog.Logger) error {
	for i, s := range c.Streams {
		path := fmt.Sprintf("streams[%d]", i)
		found, err := js.Stream(ctx, s.Name)
		switch {
		case err == nil:
			if have := found.CachedInfo().Config.Subjects; !slices.Equal(have, s.Subjects) {
				log.Warn("stream exists with other subjects than configured; jetgate leaves it as it is", "stream", s.Name, "subjects", have, "configured", s.Subjects)
			}
			continue
		case !errors.Is(err, jetstream.ErrStreamNotFound):
			return atServer(c, path, err, "look up stream %q", s.Name)
		}
		cfg := jetstream.StreamConfig{Name: s.Name, Subjects: s.Subjects, AllowMsgTTL: s.AllowMsgTTL, AllowAtomicPublish: s.AllowAtomic}
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			return atServer(c, path+".subjects", err, "create stream %q with subjects %v", s.Name, s.Subjects)
		}
		log.Info("created stream", "stream", s.Name, "subjects", s.Subjects)
	}
	return nil
}

// build creates the streams and the replica, then the servers in front of
// it. With a NATS URL, JetStream not there or not ready yet is waited for.
func (p *process) build(ctx context.Context) error {
	js, err := jetstream.New(p.nc)
	if d := p.cfg.NATS.JetStreamDomain; d != "" {
		js, err = jetstream.NewWithDomain(p.nc, d)
	}
	if err != nil {
		return err
	}
	keys, err := loadKeys(p.cfg, p.log)
	if err != nil {
		return err
	}
	var reg *prometheus.Registry
	try := func() (err error) {
		reg, err = p.bootstrap(ctx, js, keys)
		return err
	}
	if p.cfg.NATS.URL == "" {
		err = try() // embedded: its JetStream is ready once it has started
	} else {
		err = p.watch.untilAvailable(ctx, "bootstrap", try)
	}
	if err != nil {
		return err
	}
	return p.buildServers(ctx, reg)
}

// bootstrap makes, on the server, what build needs there: the streams and
// consumers (checked), the replica and its key check, registered in a new
// registry; on an error it undoes its part, to be tried again.
func (p *process) bootstrap(ctx context.Context, js jetstream.JetStream, keys *token.Keyring) (*prometheus.Registry, error) {
	if err := ensureStreams(ctx, js, p.cfg, p.log); err != nil {
		return nil, err
	}
	if err := checkOnServer(ctx, js, p.cfg); err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfo(), p.refused, p.stalls.stalls,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "jetgate_nats_connected",
			Help: "1 while the replica's connection to NATS is up, 0 while it is away (reconnecting); /readyz answers 503 then.",
		}, func() float64 {
			if p.nc.IsConnected() {
				return 1
			}
			return 0
		}))
	lim := p.cfg.Limits
	r, err := replica.New(ctx, replica.Options{
		Conn: p.nc, Consumers: p.cfg.ConsumerConfigs(), Pushes: p.cfg.PushConfigs(), Keys: keys,
		MaxBatch: lim.MaxBatch, MaxExpires: time.Duration(lim.MaxExpires), MaxFetchBytes: lim.MaxFetchBytes,
		MaxNakDelay: time.Duration(lim.MaxNakDelay), MaxLease: time.Duration(lim.MaxLease),
		Metrics: reg, Logger: p.log, Tracing: p.trc, OnDemand: p.cfg.OnDemand.CoreOnDemand(), Admin: p.cfg.Admin.CoreAdmin(),
		Domain: p.cfg.NATS.JetStreamDomain,
	})
	if err != nil {
		return nil, explainRefusal(p.cfg, err)
	}
	// Replicas that do not share the token key cannot settle each other's
	// tokens: say so loudly, at start-up.
	kc, err := keycheck.Start(keycheck.Options{Conn: p.nc, Keys: keys, Logger: p.log, Metrics: reg})
	if err != nil {
		r.Close()
		return nil, err
	}
	p.replica = r
	p.watch.replica.Store(r)
	p.onClose(r.Close)
	p.onClose(kc.Close)
	return reg, nil
}

// checkOnServer checks what the configuration cannot tell alone: that each
// consumer's stream exists when it is not configured, and that a stream
// other than the consumer's own binds each dead-letter subject that no
// configured stream binds.
func checkOnServer(ctx context.Context, js jetstream.JetStream, c *config.Config) error {
	found := make(map[string]bool)
	for i, k := range c.Consumers {
		path := fmt.Sprintf("consumers[%d]", i)
		if c.StreamNamed(k.Stream) == nil && !found[k.Stream] {
			found[k.Stream] = true
			_, err := js.Stream(ctx, k.Stream)
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				return c.Errorf(path+".stream", "stream %q of consumer %q does not exist on the server, and jetgate is not configured to create it: give its subjects (in streams, or with --stream-subjects), or create it", k.Stream, k.Name)
			}
			if err != nil {
				return atServer(c, path+".stream", err, "look up stream %q", k.Stream)
			}
		}
		if k.DeadLetter == nil || c.StreamBinding(k.DeadLetter.Subject) != nil {
			continue
		}
		subj := k.DeadLetter.Subject
		name, err := js.StreamNameBySubject(ctx, subj)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			return c.Errorf(path+".dead_letter.subject", "no stream has subject %q: add a stream for the dead letters to streams, or create one", subj)
		case err != nil:
			return atServer(c, path+".dead_letter.subject", err, "look up the stream of %q", subj)
		case name == k.Stream:
			return c.Errorf(path+".dead_letter.subject", "%q is a subject of stream %q, the consumer's own: its dead letters would be delivered to it again", subj, name)
		}
	}
	return nil
}

// consumerNames lists the consumers for the log: ORDERS/billing,...
func consumerNames(c *config.Config) string {
	names := make([]string, len(c.Consumers))
	for i, k := range c.Consumers {
		names[i] = k.Stream + "/" + k.Name
	}
	return strings.Join(names, ",")
}

// redactedURL is url with its user information masked, for logs and errors.
func redactedURL(url string) string { return config.MaskURLs(url) }

// pingEvery and pingsOut bound how long a stalled NATS connection is kept
// when nothing waits on it: at most 30s (stall.go finds it sooner when
// something does).
const (
	pingEvery = 10 * time.Second
	pingsOut  = 2
)

// connect starts the embedded server (when no URL is configured) and
// connects to NATS, watched for the probes and for stalls. A NATS server
// that cannot be reached yet is waited for (untilAvailable).
func (p *process) connect(ctx context.Context) error {
	p.watch = newNATSWatch(p.log, p.health)
	opts := append([]nats.Option{
		nats.Name("jetgate"),
		nats.MaxReconnects(-1),
		// A connection that stalls without closing (a proxy or a network
		// that stops forwarding) is given up within pingEvery × (pingsOut+1)
		// and replaced, rather than after nats.go's default of minutes.
		nats.PingInterval(pingEvery),
		nats.MaxPingsOutstanding(pingsOut),
		// Back within a second of NATS taking connections again (nats.go's
		// default waits 2s between tries).
		nats.ReconnectWait(500 * time.Millisecond),
		// Nothing waits in a reconnect buffer: a settle sent late would land
		// on the next delivery of its message, a late publish be a duplicate.
		nats.ReconnectBufSize(-1),
	}, p.watch.options()...)
	if p.cfg.NATS.URL == "" {
		unlock, err := embedded.Lock(p.cfg.Embedded.DataDir)
		if err != nil {
			return p.cfg.Errorf("embedded.data_dir", "%v", err)
		}
		p.onClose(unlock) // once the server has stopped
		ns, creds, err := startEmbedded(p.cfg, p.log)
		if err != nil {
			return err
		}
		p.onClose(func() {
			ns.Shutdown()
			ns.WaitForShutdown()
		})
		if p.cfg.Embedded.Listen != "" {
			p.addrs.NATS = ns.ClientURL()
		}
		if p.nc, err = nats.Connect(ns.ClientURL(), append(append(opts, nats.InProcessServer(ns)), creds...)...); err != nil {
			return fmt.Errorf("connect to embedded NATS: %w", err)
		}
	} else {
		secured, err := natsSecurity(p.cfg)
		if err != nil {
			return err
		}
		// Not nats.RetryOnFailedConnect: it would wait out refused
		// credentials and certificates too, which must stop start-up.
		err = p.watch.untilAvailable(ctx, "connect", func() (err error) {
			if p.nc, err = nats.Connect(p.cfg.NATS.URL, append(opts, secured...)...); err != nil {
				return atServer(p.cfg, "nats.url", err, "%s", redactedURL(p.cfg.NATS.URL))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	p.onClose(func() { p.watch.close(p.nc) })
	p.stalls = newStallWatch(p.nc, p.log)
	p.onClose(p.stalls.close)
	return nil
}

// natsWatch follows the NATS connection for the probes and the process. A
// connection that drops reconnects on its own (nats.go, without end) and
// resubscribes; one the server closes for good (nats.go takes most -ERRs as
// fatal) cannot, and then the process stops with an error, so that an
// orchestrator starts it again.
type natsWatch struct {
	log      *slog.Logger
	health   *health.Server
	stopping atomic.Bool
	lost     chan error // the reason the connection was closed for good
	// replica is told the errors NATS reports to the connection rather
	// than to a request, once it is built.
	replica atomic.Pointer[replica.Replica]
}

func newNATSWatch(log *slog.Logger, hs *health.Server) *natsWatch {
	return &natsWatch{log: log, health: hs, lost: make(chan error, 1)}
}

func (w *natsWatch) options() []nats.Option {
	return []nats.Option{
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			// A publish the server refuses for the permissions of
			// jetgate's user is answered only here: the replica ends
			// the callers waiting on its subject at once.
			if r := w.replica.Load(); r != nil {
				r.AsyncError(err)
			}
			if sub != nil {
				w.log.Warn("NATS reported an error", "err", err, "subscription", sub.Subject)
				return
			}
			w.log.Warn("NATS reported an error", "err", err)
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if w.stopping.Load() {
				return
			}
			w.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
			w.log.Warn("NATS disconnected; reconnecting", "err", err)
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			w.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
			w.log.Info("NATS reconnected", "url", c.ConnectedUrlRedacted())
		}),
		nats.ClosedHandler(func(c *nats.Conn) {
			if w.stopping.Load() {
				return
			}
			w.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
			err := fmt.Errorf("the NATS connection was closed for good: %v", c.LastError())
			w.log.Error("NATS closed the connection for good; stopping, so that jetgate is started again", "err", c.LastError())
			select {
			case w.lost <- err:
			default:
			}
		}),
	}
}

// close closes nc as the process stops: no warning, no lost connection.
func (w *natsWatch) close(nc *nats.Conn) {
	w.stopping.Store(true)
	nc.Close()
}

// live is the liveness probe: failing once the connection is closed for
// good, which no reconnect mends.
func (w *natsWatch) live(nc *nats.Conn) func() error {
	return func() error {
		if nc.IsClosed() && !w.stopping.Load() {
			return errors.New("the NATS connection is closed")
		}
		return nil
	}
}
