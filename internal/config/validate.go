package config

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jetgate/jetgate/internal/auth"
	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natsname"
)

// Bounds the configuration is held to.
const (
	MinAckWait       = consumer.MinAckWait
	MinMaxExpires    = time.Second
	MinMaxBodyBytes  = 1 << 10
	MinMaxFetchBytes = 1 << 10
	MinMaxNakDelay   = time.Second
	MaxMaxFetchBytes = 64 << 20
)

// Validate checks every rule that needs no NATS server, section by section
// in the file's order, and returns the first broken one as an *Error. What
// only the server can tell (whether a stream that is not configured exists,
// which stream binds a dead-letter subject that no configured stream does)

// Validate checks the rules between fields, each error naming the field
// and where it came from.
func (c *Config) Validate() error {
	v := validator{c}
	for _, check := range []func() *Error{v.validateNATS, v.validateListen, v.validateTokens, v.validateStreams, v.validateConsumers, v.validateOnDemand, v.validateAuth, v.validateLimits, v.validateAdmin} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validator holds the rules between a configuration's fields, each
// reported with the path and origin (line or flag) of the field it names.
// Its rules, by file: this one; priority.go (priority groups and pause);
// ondemand.go; admin.go; and the push block's in push.go (on Config).
type validator struct{ *Config }

func (c *validator) validateNATS() *Error {
	if (c.NATS.TLS.Cert == "") != (c.NATS.TLS.Key == "") {
		p, other := "nats.tls.cert", "nats.tls.key"
		if c.NATS.TLS.Cert == "" {
			p, other = other, p
		}
		return c.errorf(p, "goes together with %s", c.label(other))
	}
	if d := c.NATS.JetStreamDomain; d != "" {
		switch {
		case c.NATS.URL == "":
			return c.errorf("nats.jetstream_domain", "needs nats.url: the embedded server's JetStream is jetgate's own, in no domain")
		case strings.ContainsAny(d, ".*> \t"):
			return c.errorf("nats.jetstream_domain", "%s: a domain is one subject token (no '.', '*', '>' or white space)", quote(d))
		}
	}
	if c.NATS.URL != "" {
		return nil // the embedded section is not used
	}
	if c.Embedded.DataDir == "" {
		return c.errorf("embedded.data_dir", "the embedded server needs a directory for its store")
	}
	if l := c.Embedded.Listen; l != "" {
		_, port, err := net.SplitHostPort(l)
		if err != nil {
			return c.errorf("embedded.listen", "%s: give host:port, or nothing for an in-process server only", quote(l))
		}
		if _, err := strconv.Atoi(port); err != nil {
			return c.errorf("embedded.listen", "%s: the port is not a number", quote(l))
		}
	}
	return nil
}

func (c *validator) validateListen() *Error {
	for _, a := range []struct{ path, addr string }{{"listen.grpc", c.Listen.GRPC}, {"listen.http", c.Listen.HTTP}} {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return c.errorf(a.path, "%s: give host:port (or :port for every interface)", quote(a.addr))
		}
	}
	t := c.Listen.TLS
	switch {
	case (t.Cert == "") != (t.Key == ""):
		return c.errorf("listen.tls.key", "listen.tls.cert and listen.tls.key go together")
	case t.ClientCA != "" && t.Cert == "":
		return c.errorf("listen.tls.client_ca", "client certificates need TLS: set listen.tls.cert and listen.tls.key too")
	}
	for i, o := range c.Listen.CORSOrigins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" {
			return c.errorf(index("listen.cors_origins", i), "%s: give an origin such as https://app.example.com (scheme and host, no path)", quote(o))
		}
	}
	return nil
}

// validateAuth checks the auth section, and the safe default: without
// authentication, the listeners take only loopback addresses unless
// allow_unauthenticated says otherwise.
func (c *validator) validateAuth() *Error {
	a := c.Auth
	for i, k := range a.APIKeys {
		p := index("auth.api_keys", i)
		if k.Principal == "" {
			return c.errorf(p+".principal", "required")
		}
		if len(k.Principal) > auth.MaxPrincipal {
			return c.errorf(p+".principal", "%d bytes; at most %d (every settle names its caller)", len(k.Principal), auth.MaxPrincipal)
		}
		if b, err := hex.DecodeString(k.SHA256); err != nil || len(b) != sha256.Size {
			return c.errorf(p+".sha256", "give the hex SHA-256 of the key (64 hex digits), never the key itself")
		}
	}
	if j := a.JWT; j != nil {
		// Without an issuer and an audience, a token the same identity
		// provider signed for another service would pass (a reviewer's
		// finding: the README promises both are checked).
		switch {
		case j.JWKSFile == "":
			return c.errorf("auth.jwt.jwks_file", "required with auth.jwt")
		case j.Issuer == "":
			return c.errorf("auth.jwt.issuer", "required with auth.jwt: the iss every token must carry (your identity provider's issuer URL); without it a token of any issuer the JWKS keys signed would pass")
		case j.Audience == "":
			return c.errorf("auth.jwt.audience", "required with auth.jwt: the aud every token must carry (jetgate's name at your identity provider); without it a token the provider signed for another service would pass")
		}
	}
	if a.MTLS && c.Listen.TLS.ClientCA == "" {
		return c.errorf("auth.mtls", "needs listen.tls.client_ca (and listen.tls.cert, listen.tls.key): client certificates are verified against it")
	}
	for i, g := range a.Grants {
		p := index("auth.grants", i)
		switch {
		case g.Principal == "":
			return c.errorf(p+".principal", "required")
		case g.Stream == "":
			return c.errorf(p+".stream", `required ("*" for any stream)`)
		case len(g.Actions) == 0:
			return c.errorf(p+".actions", "give at least one of %s", actionNames())
		}
		for j, act := range g.Actions {
			if !slices.Contains(auth.Actions, auth.Action(act)) {
				return c.errorf(index(p+".actions", j), "%s is not one of %s", quote(act), actionNames())
			}
		}
	}
	if len(a.Grants) > 0 && !a.Enabled() {
		return c.errorf("auth.grants", "grants need a way to authenticate: auth.api_keys, auth.jwt or auth.mtls")
	}
	if a.Enabled() || a.AllowUnauthenticated {
		return nil
	}
	for _, l := range []struct{ path, addr string }{{"listen.grpc", c.Listen.GRPC}, {"listen.http", c.Listen.HTTP}} {
		if !loopback(l.addr) {
			return c.errorf(l.path, "%s listens beyond loopback without authentication: configure auth, or set auth.allow_unauthenticated: true (--allow-unauthenticated) to serve anyone who can reach it", quote(l.addr))
		}
	}
	return nil
}

// loopback reports whether a listen address takes only local connections.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (c *validator) validateTokens() *Error {
	for i, f := range c.Tokens.KeyFiles {
		if strings.TrimSpace(f) == "" {
			return c.errorf(index("tokens.key_files", i), "empty file name")
		}
	}
	return nil
}

func (c *validator) validateStreams() *Error {
	seen := make(map[string]string)
	for i, s := range c.Streams {
		p := index("streams", i)
		if err := c.checkName(p+".name", s.Name); err != nil {
			return err
		}
		if first, dup := seen[s.Name]; dup {
			return c.errorf(p+".name", "stream %s is configured twice (first as %s)", quote(s.Name), first)
		}
		seen[s.Name] = p
		if len(s.Subjects) == 0 {
			return c.errorf(p+".subjects", "stream %s needs at least one subject (it is created with them when missing)", quote(s.Name))
		}
		for j, subj := range s.Subjects {
			if why := natsname.SubjectProblem(subj, true); why != "" {
				return c.errorf(index(p+".subjects", j), "%s %s", quote(subj), why)
			}
		}
	}
	return nil
}

func (c *validator) validateConsumers() *Error {
	if len(c.Consumers) == 0 && len(c.OnDemand.Match) == 0 && c.Admin == nil {
		return c.errorf("consumers", "no consumer is configured: add one to consumers, give --stream and --consumer, "+
			"serve existing consumers with on_demand (--on-demand STREAM/CONSUMER), or let callers make them (admin)")
	}
	seen := make(map[[2]string]string)
	deadLetters := make(map[string]string)
	for i, k := range c.Consumers {
		p := index("consumers", i)
		if err := c.checkName(p+".stream", k.Stream); err != nil {
			return err
		}
		if err := c.checkName(p+".name", k.Name); err != nil {
			return err
		}
		key := [2]string{k.Stream, k.Name}
		if first, dup := seen[key]; dup {
			return c.errorf(p, "consumer %s of stream %s is configured twice (first as %s)", quote(k.Name), quote(k.Stream), first)
		}
		seen[key] = p
		if err := c.validateConsumer(p, k); err != nil {
			return err
		}
		if dl := k.DeadLetter; dl != nil {
			if err := c.validateDeadLetter(p, k, deadLetters); err != nil {
				return err
			}
			deadLetters[dl.Subject] = p
		}
	}
	return nil
}

func (c *validator) validateConsumer(p string, k Consumer) *Error {
	if natsname.Internal(k.Stream) {
		return c.errorf(p+".stream", "%s is a stream jetgate makes for itself: its consumers are never served", quote(k.Stream))
	}
	if c.named(p+".ack_wait") && time.Duration(k.AckWait) < MinAckWait {
		return c.errorf(p+".ack_wait", "%v: must be at least %v", k.AckWait, MinAckWait)
	}
	if c.named(p+".max_ack_pending") && k.MaxAckPending < 1 {
		return c.errorf(p+".max_ack_pending", "%d: must be at least 1 (jetgate holds a lease for every message pending)", k.MaxAckPending)
	}
	for j, f := range k.FilterSubjects {
		if why := natsname.SubjectProblem(f, true); why != "" {
			return c.errorf(index(p+".filter_subjects", j), "%s %s", quote(f), why)
		}
	}
	policy, named := k.DeliverPolicy, c.named(p+".deliver_policy")
	if _, ok := deliverPolicies[policy]; named && !ok {
		return c.errorf(p+".deliver_policy", "%s is not a deliver policy: use one of %s", quote(policy), policyNames)
	}
	if policy == "last_per_subject" && len(k.FilterSubjects) == 0 {
		return c.errorf(p+".deliver_policy", "last_per_subject needs %s (the server requires one)", c.label(p+".filter_subjects"))
	}
	switch {
	case policy == "by_start_sequence" && k.OptStartSeq == 0:
		return c.errorf(p+".deliver_policy", "by_start_sequence needs %s (1 or more)", c.label(p+".opt_start_seq"))
	case policy != "by_start_sequence" && k.OptStartSeq != 0:
		return c.errorf(p+".opt_start_seq", "%d goes with %s by_start_sequence", k.OptStartSeq, c.label(p+".deliver_policy"))
	}
	switch {
	case policy == "by_start_time":
		if _, err := time.Parse(time.RFC3339Nano, k.OptStartTime); err != nil {
			return c.errorf(c.startTimePath(p, k), "%s: give an RFC 3339 time, such as 2026-01-02T15:04:05Z (by_start_time needs it)", quote(k.OptStartTime))
		}
	case k.OptStartTime != "":
		return c.errorf(p+".opt_start_time", "%s goes with %s by_start_time", quote(k.OptStartTime), c.label(p+".deliver_policy"))
	}
	if c.named(p+".max_deliver") && k.MaxDeliver != -1 && k.MaxDeliver < 1 {
		return c.errorf(p+".max_deliver", "%d: give -1 (unlimited) or 1 or more", k.MaxDeliver)
	}
	for j, d := range k.Backoff {
		if time.Duration(d) < MinAckWait {
			return c.errorf(index(p+".backoff", j), "%v: every step must be at least %v", d, MinAckWait)
		}
	}
	if k.MaxDeliver > 0 && len(k.Backoff) > 0 && k.MaxDeliver <= len(k.Backoff) {
		return c.errorf(p+".max_deliver", "%d: must be more than the %d steps of backoff (the server requires it)", k.MaxDeliver, len(k.Backoff))
	}
	if err := c.validatePriority(p, k); err != nil {
		return err
	}
	return c.validatePush(p, k)
}

// startTimePath is where a missing or bad start time is reported: at the
// start time if the configuration gives one, else at the policy.
func (c *validator) startTimePath(p string, k Consumer) string {
	if k.OptStartTime == "" && !c.named(p+".opt_start_time") {
		return p + ".deliver_policy"
	}
	return p + ".opt_start_time"
}

// validateDeadLetter holds the dead-letter subject to these rules: a literal
// subject (no wildcards, no "$"), one consumer's only, and, when a
// configured stream binds it, not the consumer's own stream (its dead
// letters would come back to it). That some stream binds it is checked here
// when a configured stream does, and otherwise at start-up, on the server.
func (c *validator) validateDeadLetter(p string, k Consumer, taken map[string]string) *Error {
	dp := p + ".dead_letter.subject"
	subj := k.DeadLetter.Subject
	if subj == "" {
		return c.errorf(dp, "the dead-letter subject is required")
	}
	if why := natsname.SubjectProblem(subj, false); why != "" {
		return c.errorf(dp, "%s %s", quote(subj), why)
	}
	if strings.HasPrefix(subj, "$") {
		return c.errorf(dp, "%s: subjects starting with $ belong to the system", quote(subj))
	}
	if first, dup := taken[subj]; dup {
		return c.errorf(dp, "%s is already the dead-letter subject of %s: give each consumer its own", quote(subj), first)
	}
	if s := c.StreamBinding(subj); s != nil && s.Name == k.Stream {
		return c.errorf(dp, "%s is a subject of stream %s, the consumer's own: its dead letters would be delivered to it again", quote(subj), quote(s.Name))
	}
	return nil
}

func (c *validator) validateLimits() *Error {
	l := c.Limits
	switch {
	case l.MaxBatch < 1:
		return c.errorf("limits.max_batch", "%d: must be at least 1", l.MaxBatch)
	case time.Duration(l.MaxExpires) < MinMaxExpires:
		return c.errorf("limits.max_expires", "%v: must be at least %v", l.MaxExpires, MinMaxExpires)
	case l.MaxBodyBytes < MinMaxBodyBytes:
		return c.errorf("limits.max_body_bytes", "%d: must be at least %d", l.MaxBodyBytes, MinMaxBodyBytes)
	case l.MaxFetchBytes < MinMaxFetchBytes || l.MaxFetchBytes > MaxMaxFetchBytes:
		return c.errorf("limits.max_fetch_bytes", "%d: must be between 1 KiB and 64 MiB (the default, %d, fits a default gRPC client's 4 MiB)",
			l.MaxFetchBytes, defaultLimits().MaxFetchBytes)
	case time.Duration(l.MaxNakDelay) < MinMaxNakDelay:
		return c.errorf("limits.max_nak_delay", "%v: must be at least %v (the default is %v)", l.MaxNakDelay, MinMaxNakDelay, defaultLimits().MaxNakDelay)
	case time.Duration(l.MaxLease) < time.Second:
		return c.errorf("limits.max_lease", "%v: must be at least 1s (the default is %v)", l.MaxLease, defaultLimits().MaxLease)
	case time.Duration(l.IdleTimeout) < time.Second:
		return c.errorf("limits.idle_timeout", "%v: must be at least 1s (the default is %v)", l.IdleTimeout, defaultLimits().IdleTimeout)
	case l.MaxConnections < 1:
		return c.errorf("limits.max_connections", "%d: must be at least 1 (the default is %d)", l.MaxConnections, defaultLimits().MaxConnections)
	}
	return nil
}

// subjectMatches reports whether the literal subject matches pattern.
func subjectMatches(pattern, subject string) bool {
	pt, st := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i, p := range pt {
		switch {
		case p == ">":
			return len(st) > i
		case i >= len(st):
			return false
		case p != "*" && p != st[i]:
			return false
		}
	}
	return len(pt) == len(st)
}

// checkName holds a stream or consumer name to natsname's rule.
func (c *validator) checkName(path, name string) *Error {
	if name == "" {
		return c.errorf(path, "required")
	}
	if err := natsname.Check("name", name); err != nil {
		return c.errorf(path, "%s", strings.TrimPrefix(err.Error(), "name "))
	}
	return nil
}

// actionNames lists the actions a grant may name, as the configuration
// spells them.
func actionNames() string {
	names := make([]string, len(auth.Actions))
	for i, a := range auth.Actions {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}
