package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
)

// Flags are the command line's settings (each also an environment
// variable): the process settings and the single-consumer shortcut. With no
// configuration file they are the whole configuration, defaults included,
// exactly as before there was a file. With a file, those named in Given
// override it.
type Flags struct {
	NATSURL        string
	NATSCreds      string // credentials file (JWT and seed) for --nats-url
	JSDomain       string // the JetStream domain to serve, with --nats-url
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
	// AllowUnauthenticated lets listeners beyond loopback serve without
	// authentication; Metrics and Reflection turn /metrics and gRPC
	// reflection on or off.
	AllowUnauthenticated bool
	Metrics              bool
	Reflection           bool
	// OnDemand are --on-demand's STREAM/CONSUMER glob patterns: existing
	// consumers served on their first call (on_demand.match).
	OnDemand []string

	// Env names the flags set from the environment, by flag name, with the
	// variable that set them ("grpc-addr": "JETGATE_GRPC_ADDR"): an error
	// about the value names the variable.
	Env map[string]string

	// Given names the flags set explicitly, on the command line or in the
	// environment, by flag name ("ack-wait"). It matters with a file, and
	// with --on-demand: that alone makes up no consumer, --consumer does.
	Given map[string]bool
}

// DefaultFlags are the flags' defaults, as the README documents them.
func DefaultFlags() Flags {
	return Flags{
		DataDir:       DefaultDataDir,
		NATSListen:    "",
		Stream:        "ORDERS",
		Consumer:      "billing",
		AckWait:       consumer.SeedAckWait,
		MaxAckPending: consumer.SeedMaxAckPending,
		DeliverPolicy: "all",
		GRPCAddr:      DefaultGRPCAddr,
		HTTPAddr:      DefaultHTTPAddr,
		MaxBatch:      consumer.DefaultMaxBatch,
		MaxExpires:    consumer.DefaultMaxExpires,
		MaxBodyBytes:  consumer.DefaultMaxBodyBytes,
		MaxFetchBytes: consumer.DefaultMaxFetchBytes,
		Metrics:       true,
		Reflection:    true,
	}
}

// processFlags are the flags of one field each.
var processFlags = []struct {
	flag, path string
	set        func(*Config, Flags)
}{
	{"nats-url", "nats.url", func(c *Config, f Flags) { c.NATS.URL = f.NATSURL }},
	{"nats-creds", "nats.creds", func(c *Config, f Flags) { c.NATS.Creds = f.NATSCreds }},
	{"js-domain", "nats.jetstream_domain", func(c *Config, f Flags) { c.NATS.JetStreamDomain = f.JSDomain }},
	{"nats-tls-ca", "nats.tls.ca", func(c *Config, f Flags) { c.NATS.TLS.CA = f.NATSTLSCA }},
	{"nats-tls-cert", "nats.tls.cert", func(c *Config, f Flags) { c.NATS.TLS.Cert = f.NATSTLSCert }},
	{"nats-tls-key", "nats.tls.key", func(c *Config, f Flags) { c.NATS.TLS.Key = f.NATSTLSKey }},
	{"data-dir", "embedded.data_dir", func(c *Config, f Flags) { c.Embedded.DataDir = f.DataDir }},
	{"nats-listen", "embedded.listen", func(c *Config, f Flags) { c.Embedded.Listen = f.NATSListen }},
	{"grpc-addr", "listen.grpc", func(c *Config, f Flags) { c.Listen.GRPC = f.GRPCAddr }},
	{"http-addr", "listen.http", func(c *Config, f Flags) { c.Listen.HTTP = f.HTTPAddr }},
	{"token-key-file", "tokens.key_files", func(c *Config, f Flags) {
		c.Tokens.KeyFiles = nil
		if f.TokenKeyFile != "" {
			c.Tokens.KeyFiles = []string{f.TokenKeyFile}
		}
	}},
	{"max-batch", "limits.max_batch", func(c *Config, f Flags) { c.Limits.MaxBatch = f.MaxBatch }},
	{"max-expires", "limits.max_expires", func(c *Config, f Flags) { c.Limits.MaxExpires = Duration(f.MaxExpires) }},
	{"max-body-bytes", "limits.max_body_bytes", func(c *Config, f Flags) { c.Limits.MaxBodyBytes = f.MaxBodyBytes }},
	{"max-fetch-bytes", "limits.max_fetch_bytes", func(c *Config, f Flags) { c.Limits.MaxFetchBytes = f.MaxFetchBytes }},
	{"allow-unauthenticated", "auth.allow_unauthenticated", func(c *Config, f Flags) { c.Auth.AllowUnauthenticated = f.AllowUnauthenticated }},
	{"metrics", "listen.metrics", func(c *Config, f Flags) { c.Listen.Metrics = &f.Metrics }},
	{"reflection", "listen.reflection", func(c *Config, f Flags) { c.Listen.Reflection = &f.Reflection }},
}

// consumerFlags describe one consumer, by field.
var consumerFlags = []struct{ flag, field string }{
	{"stream", "stream"},
	{"consumer", "name"},
	{"filter-subject", "filter_subjects"},
	{"ack-wait", "ack_wait"},
	{"max-ack-pending", "max_ack_pending"},
	{"deliver-policy", "deliver_policy"},
	{"start-seq", "opt_start_seq"},
	{"start-time", "opt_start_time"},
}

// Resolve is the effective configuration: the file (if any) with the
// flags over it and the defaults filled in, validated (Validate). With no
// file every flag counts as given, so the flags alone describe the process
// and its one consumer as they always have.
//
// With a file, the consumer flags (--stream, --consumer, --stream-subjects,
// --filter-subject, --ack-wait, --max-ack-pending, --deliver-policy,
// --start-seq, --start-time) given explicitly apply to one consumer: the
// file's consumer that --stream and --consumer (those of them given) pick,
// which must be exactly one; with none, a new consumer that both name is
// added, as the flags alone would describe it. A given --deliver-policy
// drops the file's start position unless --start-seq or --start-time is
// given too; list flags replace the file's list; --stream-subjects sets the
// subjects of that consumer's stream in streams (adding it if needed).
//
// --on-demand replaces on_demand.match. With no file, --on-demand and no
// explicit --consumer, the flags describe no consumer: the gateway serves
// on demand alone.
func Resolve(file string, f Flags) (*Config, error) {
	c := newConfig()
	if file != "" {
		var err error
		if c, err = Load(file); err != nil {
			return nil, err
		}
	}
	given := func(flag string) bool { return file == "" || f.Given[flag] }
	for name := range f.Given {
		if !knownFlag(name) {
			return nil, &Error{Flag: "--" + name, Msg: "not a setting of the configuration (a bug: the command line and package config disagree)"}
		}
	}
	for _, pf := range processFlags {
		if given(pf.flag) {
			pf.set(c, f)
			c.flags[pf.path] = f.label(pf.flag)
		}
	}
	o := overlay{c}
	if err := o.applyOnDemandFlag(f, given); err != nil {
		return nil, err
	}
	consumerGiven := given
	if file == "" && len(f.OnDemand) > 0 && !f.Given["consumer"] {
		// Serving on demand alone: the defaults make up no consumer.
		consumerGiven = func(flag string) bool { return f.Given[flag] }
	}
	if err := o.applyConsumerFlags(f, consumerGiven); err != nil {
		return nil, err
	}
	c.fillDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// overlay lays the flags over a configuration read from a file: the
// consumer flags on the consumer they pick (or a new one), --on-demand on
// on_demand.match (ondemand.go), each field recording the flag that set it.
type overlay struct{ *Config }

func knownFlag(name string) bool {
	if name == "stream-subjects" || name == "on-demand" {
		return true
	}
	for _, pf := range processFlags {
		if pf.flag == name {
			return true
		}
	}
	for _, cf := range consumerFlags {
		if cf.flag == name {
			return true
		}
	}
	return false
}

func (c overlay) applyConsumerFlags(f Flags, given func(string) bool) *Error {
	var flags []string
	for _, cf := range consumerFlags {
		if given(cf.flag) {
			flags = append(flags, f.label(cf.flag))
		}
	}
	if given("stream-subjects") {
		flags = append(flags, "--stream-subjects")
	}
	if len(flags) == 0 {
		return nil
	}
	var match []int
	for i, k := range c.Consumers {
		if (!given("stream") || k.Stream == f.Stream) && (!given("consumer") || k.Name == f.Consumer) {
			match = append(match, i)
		}
	}
	switch {
	case len(match) == 1:
		c.overrideConsumer(match[0], f, given)
	case len(match) > 1:
		return &Error{Flag: flags[0], Msg: fmt.Sprintf("%d consumers of the configuration file match: say which with --stream and --consumer", len(match))}
	case given("stream") && given("consumer"):
		c.addConsumer(f)
	case c.file == "":
		return &Error{Flag: flags[0], Msg: "describes the consumer --consumer names: give --consumer too (--on-demand alone configures no consumer)"}
	default:
		return &Error{Flag: flags[0], Msg: "no consumer of the configuration file matches: to add one, give both --stream and --consumer"}
	}
	return nil
}

// overrideConsumer sets the given consumer flags on the file's consumer i.
func (c overlay) overrideConsumer(i int, f Flags, given func(string) bool) {
	k := &c.Consumers[i]
	p := index("consumers", i)
	set := func(flag, field string, apply func()) {
		if given(flag) {
			apply()
			c.flags[join(p, field)] = f.label(flag)
		}
	}
	set("filter-subject", "filter_subjects", func() { k.FilterSubjects = f.FilterSubjects })
	set("ack-wait", "ack_wait", func() { k.AckWait = Duration(f.AckWait) })
	set("max-ack-pending", "max_ack_pending", func() { k.MaxAckPending = f.MaxAckPending })
	set("deliver-policy", "deliver_policy", func() {
		k.DeliverPolicy = f.DeliverPolicy
		// The start position belongs to the policy it came with.
		k.OptStartSeq, k.OptStartTime = 0, ""
		delete(c.lines, join(p, "opt_start_seq"))
		delete(c.lines, join(p, "opt_start_time"))
	})
	set("start-seq", "opt_start_seq", func() { k.OptStartSeq = f.StartSeq })
	set("start-time", "opt_start_time", func() { k.OptStartTime = f.StartTime })
	if given("stream-subjects") {
		c.setStreamSubjects(k.Stream, f.StreamSubjects, false)
	}
}

// addConsumer adds the consumer the flags describe, every field named.
func (c overlay) addConsumer(f Flags) {
	p := index("consumers", len(c.Consumers))
	c.Consumers = append(c.Consumers, Consumer{
		Stream:         f.Stream,
		Name:           f.Consumer,
		AckWait:        Duration(f.AckWait),
		MaxAckPending:  f.MaxAckPending,
		DeliverPolicy:  f.DeliverPolicy,
		OptStartSeq:    f.StartSeq,
		OptStartTime:   f.StartTime,
		FilterSubjects: f.FilterSubjects,
	})
	c.flags[p] = "--stream and --consumer"
	for _, cf := range consumerFlags {
		c.flags[join(p, cf.field)] = f.label(cf.flag)
	}
	// An embedded server gets the stream as it always did:
	// <stream in lower case>.> unless --stream-subjects says otherwise.
	c.setStreamSubjects(f.Stream, f.StreamSubjects, c.NATS.URL == "")
}

// setStreamSubjects configures stream name with subjects, when there are
// any; with none and orDefault, the stream gets <name in lower case>.> if
// it is not configured yet.
func (c overlay) setStreamSubjects(name string, subjects []string, orDefault bool) {
	s := c.StreamNamed(name)
	demo := false
	if len(subjects) == 0 {
		if !orDefault || s != nil {
			return
		}
		// The embedded server's demo stream, which shows every feature.
		subjects, demo = []string{strings.ToLower(name) + ".>"}, true
	}
	if s != nil {
		s.Subjects = subjects
		for i := range c.Streams {
			if &c.Streams[i] == s {
				c.flags[index("streams", i)+".subjects"] = "--stream-subjects"
			}
		}
		return
	}
	p := index("streams", len(c.Streams))
	c.Streams = append(c.Streams, Stream{Name: name, Subjects: subjects, AllowMsgTTL: demo, AllowAtomic: demo})
	c.flags[p] = "--stream"
	c.flags[p+".name"] = "--stream"
	c.flags[p+".subjects"] = "--stream-subjects"
}

// fillDefaults sets every process setting the configuration leaves out.
func (c *Config) fillDefaults() {
	def := func(path string, apply func()) {
		if !c.named(path) {
			apply()
		}
	}
	def("embedded.data_dir", func() { c.Embedded.DataDir = DefaultDataDir })
	def("listen.grpc", func() { c.Listen.GRPC = DefaultGRPCAddr })
	def("listen.http", func() { c.Listen.HTTP = DefaultHTTPAddr })
	d := defaultLimits()
	def("limits.max_batch", func() { c.Limits.MaxBatch = d.MaxBatch })
	def("limits.max_expires", func() { c.Limits.MaxExpires = d.MaxExpires })
	def("limits.max_body_bytes", func() { c.Limits.MaxBodyBytes = d.MaxBodyBytes })
	def("limits.max_fetch_bytes", func() { c.Limits.MaxFetchBytes = d.MaxFetchBytes })
	def("limits.max_nak_delay", func() { c.Limits.MaxNakDelay = d.MaxNakDelay })
	def("limits.max_lease", func() { c.Limits.MaxLease = d.MaxLease })
	def("limits.idle_timeout", func() { c.Limits.IdleTimeout = d.IdleTimeout })
	def("limits.max_connections", func() { c.Limits.MaxConnections = d.MaxConnections })
	if len(c.OnDemand.Match) > 0 {
		def("on_demand.idle_unbind", func() { c.OnDemand.IdleUnbind = Duration(consumer.DefaultIdleUnbind) })
	}
	c.fillPushDefaults()
	if a := c.Admin; a != nil { // check-config shows the bounds that hold
		filled := c.Admin.CoreAdmin()
		a.MaxAckWait, a.MaxAckPending, a.MaxWaiting = Duration(filled.MaxAckWait), filled.MaxAckPending, filled.MaxWaiting
		a.MaxPerPrincipal, a.InactiveThreshold = filled.MaxPerPrincipal, Duration(filled.InactiveThreshold)
	}
	def("console.enabled", func() { c.Console.Enabled = true })
}

// label names where flag's value came from: the flag, or the environment
// variable that set it.
func (f Flags) label(flag string) string {
	if v := f.Env[flag]; v != "" {
		return v + " (--" + flag + ")"
	}
	return "--" + flag
}
