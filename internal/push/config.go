// Package push POSTs each message of a consumer to an HTTP endpoint the
// operator configured, or with a batch many in one request, and settles
// each by the answer (DESIGN.md section 11).
// A Pusher is a Consume stream of the replica's own: its leases, extended
// while a request runs, bound how many requests are in flight. An endpoint
// that fails every message alike is held back (flow.go): one request at a
// time, and the messages it holds keep their leases rather than burn their
// deliveries.
package push

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
)

// Format is how a message becomes a request body.
type Format string

// The formats.
const (
	FormatRaw         Format = "raw"         // the data; headers as HTTP headers
	FormatJSON        Format = "json"        // the Message as Fetch returns it, less token and lease
	FormatCloudEvents Format = "cloudevents" // binary content mode: ce-* headers
)

// Batch has a pusher send up to MaxMessages messages, MaxBytes of body at
// most, in one request, waiting at most MaxWait for a batch to fill
// (batch.go).
type Batch struct {
	MaxMessages int
	MaxBytes    int64
	MaxWait     time.Duration
}

// Defaults of a push block.
const (
	DefaultConcurrency = 8
	DefaultTimeout     = 30 * time.Second
	DefaultRetryMin    = time.Second
	DefaultRetryMax    = 10 * time.Minute

	DefaultBatchMaxMessages = 100
	DefaultBatchMaxBytes    = 1 << 20
	DefaultBatchMaxWait     = 20 * time.Millisecond
)

// Bounds of a batch.
const (
	MaxBatchMessages = 1000
	MaxBatchBytes    = 64 << 20
	MaxBatchWait     = 5 * time.Minute
)

// Config is one consumer's push block.
type Config struct {
	Stream, Consumer string
	URL              string
	Concurrency      int
	Timeout          time.Duration
	Format           Format
	RetryMin         time.Duration
	RetryMax         time.Duration
	// HTTP2 speaks HTTP/2 alone: h2c (prior knowledge) to an http URL, h2
	// to an https one. Unset, an https endpoint gets h2 if its TLS offers
	// it (ALPN), an http one HTTP/1.1.
	HTTP2 bool
	// Files read at start: the Standard Webhooks secret (whsec_<base64>),
	// the bearer token, and TLS to the endpoint.
	SigningSecretFile string
	BearerTokenFile   string
	TLSCA             string
	TLSCert           string
	TLSKey            string
	// Batch, if set, sends many messages a request; nil: one.
	Batch *Batch
}

// WithDefaults fills what the block leaves unset.
func (c Config) WithDefaults() Config {
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Format == "" {
		c.Format = FormatRaw
	}
	if c.RetryMin == 0 {
		c.RetryMin = DefaultRetryMin
	}
	if c.RetryMax == 0 {
		c.RetryMax = max(DefaultRetryMax, c.RetryMin)
	}
	if c.Batch != nil {
		b := *c.Batch
		b.MaxMessages = cmp.Or(b.MaxMessages, DefaultBatchMaxMessages)
		b.MaxBytes = cmp.Or(b.MaxBytes, DefaultBatchMaxBytes)
		b.MaxWait = cmp.Or(b.MaxWait, DefaultBatchMaxWait)
		c.Batch = &b
	}
	return c
}

// leases is how many leases a pusher holds at most: a request's worth for
// each of its workers.
func (c Config) leases() int {
	if c.Batch == nil {
		return c.Concurrency
	}
	return c.Concurrency * c.Batch.MaxMessages
}

// leaseBytes is how many bytes of messages a batching pusher holds at most
// (0: no bound but leases): a request's max_bytes for each of its workers,
// and room for the largest message one pull takes (pullMax), so that one
// too large for a batch still comes, alone, as it did before the bound.
// Without it, batches of large messages held max_messages of them per
// worker, each lease kept alive away from the other replicas.
func (c Config) leaseBytes(pullMax int64) int64 {
	if c.Batch == nil {
		return 0
	}
	return int64(c.Concurrency)*c.Batch.MaxBytes + pullMax
}

// FieldError names the field of a push block that is wrong.
type FieldError struct {
	Field string // as the configuration file names it, under push
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// Validate checks the block, defaults filled, as far as it can without the
// endpoint: the URL, the numbers, and that every file can be read and used.
func (c Config) Validate() error {
	if err := c.check(); err != nil {
		return err
	}
	_, err := c.secrets()
	return err
}

// check is Validate less the files.
func (c Config) check() error {
	if err := validURL(c.URL); err != nil {
		return &FieldError{"url", err}
	}
	switch {
	case c.Concurrency < 1:
		return &FieldError{"concurrency", fmt.Errorf("must be 1 or more, got %d", c.Concurrency)}
	case c.Timeout <= 0:
		return &FieldError{"timeout", errors.New("must be positive")}
	case c.RetryMin <= 0:
		return &FieldError{"retry.min", errors.New("must be positive")}
	case c.RetryMax < c.RetryMin:
		return &FieldError{"retry.max", fmt.Errorf("must be at least retry.min (%v)", c.RetryMin)}
	}
	switch c.Format {
	case FormatRaw, FormatJSON, FormatCloudEvents:
	default:
		return &FieldError{"format", fmt.Errorf("%q is not one of raw, json, cloudevents", c.Format)}
	}
	return c.Batch.check()
}

// check checks a batch, defaults filled; nil is none.
func (b *Batch) check() error {
	switch {
	case b == nil:
		return nil
	case b.MaxMessages < 1 || b.MaxMessages > MaxBatchMessages:
		return &FieldError{"batch.max_messages", fmt.Errorf("must be between 1 and %d, got %d", MaxBatchMessages, b.MaxMessages)}
	case b.MaxBytes < 1 || b.MaxBytes > MaxBatchBytes:
		return &FieldError{"batch.max_bytes", fmt.Errorf("must be between 1 and %d (64 MiB), got %d", MaxBatchBytes, b.MaxBytes)}
	case b.MaxWait <= 0:
		return &FieldError{"batch.max_wait", errors.New("must be positive")}
	case b.MaxWait > MaxBatchWait:
		return &FieldError{"batch.max_wait", fmt.Errorf("must be at most %v, got %v", MaxBatchWait, b.MaxWait)}
	}
	return nil
}

func validURL(raw string) error {
	if raw == "" {
		return errors.New("is required")
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("is not a URL: %v", err)
	case u.Scheme == "h2c":
		return errors.New(`scheme "h2c" is not http or https; for h2c, give an http URL and http2: true`)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("scheme %q is not http or https", u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return errors.New("has no host")
	case u.User != nil:
		return errors.New("must not carry credentials; use bearer_token_file")
	case u.Fragment != "":
		return errors.New("must not have a fragment")
	}
	return nil
}

// secrets are what the block's files hold.
type secrets struct {
	signingKey []byte // nil: no signature
	bearer     string
	tls        *tls.Config // nil: the system's roots, no client certificate
}

func (c Config) secrets() (secrets, error) {
	var s secrets
	if c.SigningSecretFile != "" {
		b, err := os.ReadFile(c.SigningSecretFile)
		if err != nil {
			return s, &FieldError{"signing_secret_file", err}
		}
		if s.signingKey, err = signingKey(strings.TrimSpace(string(b))); err != nil {
			return s, &FieldError{"signing_secret_file", err}
		}
	}
	if c.BearerTokenFile != "" {
		b, err := os.ReadFile(c.BearerTokenFile)
		if err != nil {
			return s, &FieldError{"bearer_token_file", err}
		}
		if s.bearer = strings.TrimSpace(string(b)); s.bearer == "" || strings.ContainsAny(s.bearer, "\r\n") {
			return s, &FieldError{"bearer_token_file", errors.New("holds no token on one line")}
		}
	}
	var err error
	s.tls, err = c.tlsConfig()
	return s, err
}

// signingKey decodes a Standard Webhooks secret: whsec_ and base64.
func signingKey(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return nil, errors.New(`the secret must start with "whsec_" (Standard Webhooks)`)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(key) < 24 {
		return nil, errors.New("the secret after whsec_ must be base64 of 24 bytes or more")
	}
	return key, nil
}

func (c Config) tlsConfig() (*tls.Config, error) {
	if c.TLSCA == "" && c.TLSCert == "" && c.TLSKey == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.TLSCA != "" {
		pem, err := os.ReadFile(c.TLSCA)
		if err != nil {
			return nil, &FieldError{"tls.ca", err}
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, &FieldError{"tls.ca", errors.New("holds no PEM certificate")}
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return nil, &FieldError{"tls.cert", errors.New("tls.cert and tls.key go together")}
	}
	if c.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
		if err != nil {
			return nil, &FieldError{"tls.cert", err}
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
