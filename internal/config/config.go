// Package config is jetgate's configuration: the YAML file of DESIGN.md
// section 7 (--config), the flags that stand in for it or override it, the
// rules a configuration must keep before anything connects, and the
// effective configuration printed with its secrets masked (check-config).
//
// A field the configuration does not name stays zero: for a consumer that
// means "not named", which bootstrap leaves as the server has it (see
// consumer.Config); for the process settings Resolve fills in the defaults.
package config

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/auth"
	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natsname"
)

// Config is the whole configuration of one process. The yaml tags are the
// file's field names, the contract of DESIGN.md section 7.
type Config struct {
	NATS      NATS       `yaml:"nats"`
	Embedded  Embedded   `yaml:"embedded"`
	Listen    Listen     `yaml:"listen"`
	Tokens    Tokens     `yaml:"tokens"`
	Streams   []Stream   `yaml:"streams"`
	Consumers []Consumer `yaml:"consumers"`
	OnDemand  OnDemand   `yaml:"on_demand"`
	Auth      Auth       `yaml:"auth"`
	Limits    Limits     `yaml:"limits"`
	Console   Console    `yaml:"console"`
	Admin     *Admin     `yaml:"admin,omitempty"`

	*origins `yaml:"-"` // where each value came from, for errors that name it
}

// NATS is the connection to a NATS server; an empty URL runs the embedded
// server instead.
type NATS struct {
	URL   string  `yaml:"url"` // one or more, comma-separated
	Creds string  `yaml:"creds"`
	TLS   NATSTLS `yaml:"tls"`
	// JetStreamDomain is the domain whose JetStream jetgate serves
	// ($JS.<domain>.API): a hub's from a leaf node, a leaf's from the hub.
	JetStreamDomain string `yaml:"jetstream_domain"`
}

// NATSTLS are the files jetgate verifies the NATS server by and, for
// servers that ask, its client certificate.
type NATSTLS struct {
	CA   string `yaml:"ca"`
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
}

// Embedded configures the in-process server run when NATS.URL is empty.
type Embedded struct {
	DataDir string `yaml:"data_dir"`
	Listen  string `yaml:"listen"` // host:port for other clients; "" in-process only
}

// Listen are the gRPC and REST listeners.
type Listen struct {
	GRPC        string    `yaml:"grpc"`
	HTTP        string    `yaml:"http"`
	TLS         ListenTLS `yaml:"tls"`
	CORSOrigins []string  `yaml:"cors_origins"`
	// Metrics serves GET /metrics on the REST listener (to authenticated
	// callers, when auth is on); Reflection serves gRPC reflection (the
	// same). Both are on unless set to false.
	Metrics    *bool `yaml:"metrics,omitempty"`
	Reflection *bool `yaml:"reflection,omitempty"`
}

// On reports whether an optional feature is on: unless set to false.
func On(b *bool) bool { return b == nil || *b }

// ListenTLS is the listeners' certificate and, for mTLS, the CA that
// client certificates must chain to.
type ListenTLS struct {
	Cert     string `yaml:"cert"`
	Key      string `yaml:"key"`
	ClientCA string `yaml:"client_ca"`
}

// Tokens names the token key files: the first plain key line across them,
// in order, signs; every key of every file verifies.
type Tokens struct {
	KeyFiles []string `yaml:"key_files"`
}

// Stream is a stream jetgate creates at start, with Subjects, when it is
// missing. An existing stream is left as it is.
type Stream struct {
	Name     string   `yaml:"name"`
	Subjects []string `yaml:"subjects"`
	// AllowMsgTTL lets a message carry its own ttl (Publish ttl);
	// AllowAtomic takes atomic batches (PublishBatch). Off unless named.
	AllowMsgTTL bool `yaml:"allow_msg_ttl,omitempty"`
	AllowAtomic bool `yaml:"allow_atomic,omitempty"`
}

// Consumer is one durable pull consumer jetgate creates or updates and
// serves. Zero fields are not named.
type Consumer struct {
	Stream         string      `yaml:"stream"`
	Name           string      `yaml:"name"`
	AckWait        Duration    `yaml:"ack_wait,omitempty"`
	MaxAckPending  int         `yaml:"max_ack_pending,omitempty"`
	DeliverPolicy  string      `yaml:"deliver_policy,omitempty"`
	OptStartSeq    uint64      `yaml:"opt_start_seq,omitempty"`
	OptStartTime   string      `yaml:"opt_start_time,omitempty"` // RFC 3339
	FilterSubjects []string    `yaml:"filter_subjects,omitempty"`
	MaxDeliver     int         `yaml:"max_deliver,omitempty"` // -1: unlimited
	Backoff        []Duration  `yaml:"backoff,omitempty"`
	DeadLetter     *DeadLetter `yaml:"dead_letter,omitempty"`
	// Priority groups (ADR-42) and pause, as the server has them.
	PriorityGroups  []string `yaml:"priority_groups,omitempty"`
	PriorityPolicy  string   `yaml:"priority_policy,omitempty"`  // overflow | pinned_client | prioritized
	PriorityTimeout Duration `yaml:"priority_timeout,omitempty"` // pinned_client
	PauseUntil      string   `yaml:"pause_until,omitempty"`      // RFC 3339
	// Push POSTs each message to an endpoint (DESIGN.md section 11).
	Push *Push `yaml:"push,omitempty"`
}

// OnDemand serves existing durable consumers the file does not name: bound
// on their first call, never created or changed (DESIGN.md section 13).
type OnDemand struct {
	Match      []OnDemandMatch `yaml:"match,omitempty"` // none: no consumer on demand
	IdleUnbind Duration        `yaml:"idle_unbind,omitempty"`
}

// OnDemandMatch names consumers by glob patterns of stream and name.
type OnDemandMatch struct {
	Stream   string `yaml:"stream"`
	Consumer string `yaml:"consumer"`
}

// CoreOnDemand is the block as the core takes it.
func (o OnDemand) CoreOnDemand() consumer.OnDemand {
	out := consumer.OnDemand{IdleUnbind: time.Duration(o.IdleUnbind)}
	for _, m := range o.Match {
		out.Match = append(out.Match, consumer.Match{Stream: m.Stream, Consumer: m.Consumer})
	}
	return out
}

// DeadLetter is where a consumer's messages that run out of deliveries
// (and, with OnTerm, those terminated) are copied.
type DeadLetter struct {
	Subject string `yaml:"subject"`
	OnTerm  bool   `yaml:"on_term"`
}

// Auth is how callers authenticate (API keys, JWT, client certificates)
// and what they may do (grants), DESIGN.md section 8. With none of the
// three, every caller is let in as the empty principal, and only on
// loopback addresses unless AllowUnauthenticated.
type Auth struct {
	AllowUnauthenticated bool     `yaml:"allow_unauthenticated,omitempty"`
	APIKeys              []APIKey `yaml:"api_keys,omitempty"`
	JWT                  *JWT     `yaml:"jwt,omitempty"`
	MTLS                 bool     `yaml:"mtls,omitempty"`
	Grants               []Grant  `yaml:"grants,omitempty"`
}

// APIKey is a caller's key, kept as its SHA-256 (hex).
type APIKey struct {
	Principal string `yaml:"principal"`
	SHA256    string `yaml:"sha256"`
}

// JWT verifies bearer JWTs against a JWKS file.
type JWT struct {
	JWKSFile string `yaml:"jwks_file"`
	Issuer   string `yaml:"issuer,omitempty"`
	Audience string `yaml:"audience,omitempty"`
}

// Grant lets a principal take actions on consumers of a stream.
type Grant struct {
	Principal string   `yaml:"principal"`
	Stream    string   `yaml:"stream"`
	Consumers []string `yaml:"consumers,omitempty"`
	Actions   []string `yaml:"actions"`
}

// Enabled reports whether the section authenticates callers.
func (a Auth) Enabled() bool { return len(a.APIKeys) > 0 || a.JWT != nil || a.MTLS }

// Limits bound what one request may ask for.
type Limits struct {
	MaxBatch      int      `yaml:"max_batch"`
	MaxExpires    Duration `yaml:"max_expires"`
	MaxBodyBytes  int64    `yaml:"max_body_bytes"`
	MaxFetchBytes int64    `yaml:"max_fetch_bytes"`
	MaxNakDelay   Duration `yaml:"max_nak_delay"`
	// MaxLease bounds how long one lease is kept alive: an Extend's
	// duration, a Consume's auto_extend.
	MaxLease Duration `yaml:"max_lease"`
	// IdleTimeout closes a connection, gRPC or HTTP, that has had no
	// request in flight for this long.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// MaxConnections bounds the connections each listener holds open; one
	// more is closed as it is accepted.
	MaxConnections int `yaml:"max_connections"`
}

// Defaults of the file, where it leaves a field out. The flags have their
// own (DefaultFlags): with no file, jetgate runs exactly as it always did.
const (
	DefaultDataDir  = "jetgate-data"
	DefaultGRPCAddr = "127.0.0.1:9090"
	DefaultHTTPAddr = "127.0.0.1:8080"
	// DefaultIdleTimeout closes an idle connection; DefaultMaxConnections
	// bounds each listener's (README, "Running in production").
	DefaultIdleTimeout    = 5 * time.Minute
	DefaultMaxConnections = 10_000
)

// DeliverPolicies are the deliver_policy values, by name.
var deliverPolicies = map[string]jetstream.DeliverPolicy{
	"all":               jetstream.DeliverAllPolicy,
	"last":              jetstream.DeliverLastPolicy,
	"new":               jetstream.DeliverNewPolicy,
	"by_start_sequence": jetstream.DeliverByStartSequencePolicy,
	"by_start_time":     jetstream.DeliverByStartTimePolicy,
	"last_per_subject":  jetstream.DeliverLastPerSubjectPolicy,
}

const policyNames = "all, last, new, by_start_sequence, by_start_time, last_per_subject"

// File is the file the configuration was read from; "" when there is none.
func (c *Config) File() string { return c.file }

// ConsumerConfigs are the consumers as internal/consumer binds them. Call
// it on a validated Config (Resolve's).
func (c *Config) ConsumerConfigs() []consumer.Config {
	out := make([]consumer.Config, 0, len(c.Consumers))
	for _, k := range c.Consumers {
		out = append(out, k.bootstrap())
	}
	return out
}

func (k Consumer) bootstrap() consumer.Config {
	cc := consumer.Config{
		Stream:         k.Stream,
		Name:           k.Name,
		AckWait:        time.Duration(k.AckWait),
		MaxAckPending:  k.MaxAckPending,
		OptStartSeq:    k.OptStartSeq,
		FilterSubjects: k.FilterSubjects,
		MaxDeliver:     k.MaxDeliver,
	}
	if p, ok := deliverPolicies[k.DeliverPolicy]; ok {
		cc.DeliverPolicy = &p
	}
	if k.OptStartTime != "" {
		if t, err := time.Parse(time.RFC3339Nano, k.OptStartTime); err == nil {
			cc.OptStartTime = &t
		}
	}
	if k.Backoff != nil {
		cc.BackOff = make([]time.Duration, len(k.Backoff))
		for i, d := range k.Backoff {
			cc.BackOff[i] = time.Duration(d)
		}
	}
	if k.DeadLetter != nil {
		cc.DeadLetter = &consumer.DeadLetter{Subject: k.DeadLetter.Subject, OnTerm: k.DeadLetter.OnTerm}
	}
	k.priority(&cc)
	return cc
}

// StreamNamed is the configured stream of that name, or nil.
func (c *Config) StreamNamed(name string) *Stream {
	for i := range c.Streams {
		if c.Streams[i].Name == name {
			return &c.Streams[i]
		}
	}
	return nil
}

// StreamBinding is the configured stream one of whose subjects matches the
// literal subject, or nil.
func (c *Config) StreamBinding(subject string) *Stream {
	for i := range c.Streams {
		for _, p := range c.Streams[i].Subjects {
			if subjectMatches(p, subject) {
				return &c.Streams[i]
			}
		}
	}
	return nil
}

// defaultLimits are the limits' defaults, the same with a file and without.
func defaultLimits() Limits {
	return Limits{
		MaxBatch:       consumer.DefaultMaxBatch,
		MaxExpires:     Duration(consumer.DefaultMaxExpires),
		MaxBodyBytes:   consumer.DefaultMaxBodyBytes,
		MaxFetchBytes:  consumer.DefaultMaxFetchBytes,
		MaxNakDelay:    Duration(consumer.DefaultMaxNakDelay),
		MaxLease:       Duration(consumer.DefaultMaxLease),
		IdleTimeout:    Duration(DefaultIdleTimeout),
		MaxConnections: DefaultMaxConnections,
	}
}

// AuthConfig is the auth section as internal/auth takes it.
func (c *Config) AuthConfig() auth.Config {
	a := auth.Config{MTLS: c.Auth.MTLS}
	for _, k := range c.Auth.APIKeys {
		a.APIKeys = append(a.APIKeys, auth.APIKey{Principal: k.Principal, SHA256: k.SHA256})
	}
	if j := c.Auth.JWT; j != nil {
		a.JWT = &auth.JWT{JWKSFile: j.JWKSFile, Issuer: j.Issuer, Audience: j.Audience}
	}
	for _, g := range c.Auth.Grants {
		ga := auth.Grant{Principal: g.Principal, Stream: g.Stream, Consumers: g.Consumers}
		for _, act := range g.Actions {
			ga.Actions = append(ga.Actions, auth.Action(act))
		}
		a.Grants = append(a.Grants, ga)
	}
	return a
}

// Warnings are what is allowed but likely not what was meant: an on_demand
// pattern other than "*" (every stream, as documented) that would match
// jetgate's own streams, which are never served.
func (c *Config) Warnings() []string {
	var out []string
	for i, k := range c.Consumers {
		if k.AckWait != 0 && len(k.Backoff) > 0 && k.AckWait != k.Backoff[0] {
			e := c.errorf(index("consumers", i)+".ack_wait", "%v with backoff: the server takes the backoff's first step (%v) as the wait of a first delivery, not ack_wait; leave ack_wait out, or make it the first step",
				time.Duration(k.AckWait), time.Duration(k.Backoff[0]))
			out = append(out, e.Error())
		}
	}
	out = append(out, c.pushWarnings()...)
	for i, m := range c.OnDemand.Match {
		if m.Stream == "*" { // every stream, as documented: jetgate's own left out
			continue
		}
		var own []string
		for _, s := range natsname.InternalStreams() {
			if ok, _ := path.Match(m.Stream, s); ok {
				own = append(own, s)
			}
		}
		if len(own) > 0 {
			e := c.errorf(fmt.Sprintf("on_demand.match[%d].stream", i), "%s matches %s, which jetgate makes for itself: their consumers are never served, whatever the pattern",
				quote(m.Stream), strings.Join(own, ", "))
			out = append(out, e.Error())
		}
	}
	return out
}

// PastPause is the first consumer whose pause_until has passed, as an error
// naming it: the server would not pause the consumer. check-config refuses
// it; a start only warns, since every pause passes in time.
func (c *Config) PastPause(now time.Time) error {
	for i, k := range c.Consumers {
		t, err := time.Parse(time.RFC3339Nano, k.PauseUntil)
		if err == nil && !t.After(now) {
			return c.errorf(index("consumers", i)+".pause_until", "%s is in the past: the consumer would not be paused; give a later time, or leave pause_until out", k.PauseUntil)
		}
	}
	return nil
}

// is checked at start-up.
