package config

import (
	"cmp"
	"errors"
	"net/url"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/push"
)

// Push is a consumer's push block (DESIGN.md section 11): where each of its
// messages is POSTed and how.
type Push struct {
	URL               string     `yaml:"url"`
	Concurrency       int        `yaml:"concurrency,omitempty"`
	Timeout           Duration   `yaml:"timeout,omitempty"`
	Format            string     `yaml:"format,omitempty"` // raw | json | cloudevents
	Retry             *Retry     `yaml:"retry,omitempty"`
	SigningSecretFile string     `yaml:"signing_secret_file,omitempty"`
	BearerTokenFile   string     `yaml:"bearer_token_file,omitempty"`
	TLS               *PushTLS   `yaml:"tls,omitempty"`
	HTTP2             bool       `yaml:"http2,omitempty"` // HTTP/2 alone: h2c to http, h2 to https
	Batch             *PushBatch `yaml:"batch,omitempty"` // many messages a request; absent: one
}

// PushBatch sends up to MaxMessages messages, MaxBytes of body, in one
// request, waiting at most MaxWait for a batch to fill. Bytes are written
// as every byte setting is: a number of bytes.
type PushBatch struct {
	MaxMessages int      `yaml:"max_messages,omitempty"`
	MaxBytes    ByteSize `yaml:"max_bytes,omitempty"`
	MaxWait     Duration `yaml:"max_wait,omitempty"`
}

// Retry bounds the delay of the Nak after a failed push.
type Retry struct {
	Min Duration `yaml:"min,omitempty"`
	Max Duration `yaml:"max,omitempty"`
}

// PushTLS verifies the endpoint and presents a client certificate.
type PushTLS struct {
	CA   string `yaml:"ca,omitempty"`
	Cert string `yaml:"cert,omitempty"`
	Key  string `yaml:"key,omitempty"`
}

// PushConfigs are the push blocks of the consumers that have one, defaults
// filled.
func (c *Config) PushConfigs() []push.Config {
	var out []push.Config
	for _, k := range c.Consumers {
		if k.Push != nil {
			out = append(out, k.pushConfig())
		}
	}
	return out
}

func (k Consumer) pushConfig() push.Config {
	p := k.Push
	cfg := push.Config{
		Stream: k.Stream, Consumer: k.Name, URL: p.URL, Concurrency: p.Concurrency,
		Timeout: time.Duration(p.Timeout), Format: push.Format(p.Format),
		SigningSecretFile: p.SigningSecretFile, BearerTokenFile: p.BearerTokenFile, HTTP2: p.HTTP2,
	}
	if p.Retry != nil {
		cfg.RetryMin, cfg.RetryMax = time.Duration(p.Retry.Min), time.Duration(p.Retry.Max)
	}
	if p.TLS != nil {
		cfg.TLSCA, cfg.TLSCert, cfg.TLSKey = p.TLS.CA, p.TLS.Cert, p.TLS.Key
	}
	if b := p.Batch; b != nil {
		cfg.Batch = &push.Batch{MaxMessages: b.MaxMessages, MaxBytes: int64(b.MaxBytes), MaxWait: time.Duration(b.MaxWait)}
	}
	return cfg.WithDefaults()
}

// fillPushDefaults writes the defaults into each push block, so that
// check-config shows what runs.
func (c *Config) fillPushDefaults() {
	for i, k := range c.Consumers {
		if k.Push == nil {
			continue
		}
		d := k.pushConfig()
		p := *k.Push
		p.Concurrency, p.Timeout, p.Format = d.Concurrency, Duration(d.Timeout), string(d.Format)
		p.Retry = &Retry{Min: Duration(d.RetryMin), Max: Duration(d.RetryMax)}
		if b := d.Batch; b != nil {
			p.Batch = &PushBatch{MaxMessages: b.MaxMessages, MaxBytes: ByteSize(b.MaxBytes), MaxWait: Duration(b.MaxWait)}
		}
		c.Consumers[i].Push = &p
	}
}

// The least push timeout and retry a configuration may name: under them no
// endpoint answers in time, every push failing while the endpoint shows up
// (a reviewer's finding: timeout 1ns pushed nothing, with no word), or a
// failing endpoint is asked again all but at once.
const (
	MinPushTimeout = 100 * time.Millisecond
	MinPushRetry   = 100 * time.Millisecond
)

// validatePush checks consumer k's push block at p, its files included.
func (c *Config) validatePush(p string, k Consumer) *Error {
	if k.Push == nil {
		return nil
	}
	pc := k.pushConfig()
	err := pc.Validate()
	var fe *push.FieldError
	if errors.As(err, &fe) {
		return c.errorf(p+".push."+fe.Field, "%v", fe.Err)
	}
	if err != nil {
		return c.errorf(p+".push", "%v", err)
	}
	switch maxNak := time.Duration(c.Limits.MaxNakDelay); {
	case pc.Timeout < MinPushTimeout:
		return c.errorf(p+".push.timeout", "%v is under %v: no endpoint could answer in time, and every push would fail", pc.Timeout, MinPushTimeout)
	case pc.RetryMin < MinPushRetry:
		return c.errorf(p+".push.retry.min", "%v is under %v: a failing endpoint would be asked again all but at once", pc.RetryMin, MinPushRetry)
	case maxNak > 0 && pc.RetryMax > maxNak:
		return c.errorf(p+".push.retry.max", "%v is above limits.max_nak_delay (%v), the longest a message may be held back", pc.RetryMax, maxNak)
	}
	return nil
}

// pushWarnings are what a push block allows but cannot do: more requests in
// flight than the consumer lets messages be (its max_ack_pending, as the
// file or jetgate's seed gives it).
func (c *Config) pushWarnings() []string {
	var out []string
	for i, k := range c.Consumers {
		if k.Push == nil {
			continue
		}
		most := cmp.Or(k.MaxAckPending, consumer.SeedMaxAckPending)
		if n := k.pushConfig().Concurrency; n > most {
			e := c.errorf(index("consumers", i)+".push.concurrency", "%d is above the consumer's max_ack_pending (%d): no more than %d requests are ever in flight", n, most, most)
			out = append(out, e.Error())
		}
	}
	return out
}

// maskQuery hides a push URL's query, which may carry a secret.
func maskQuery(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery == "" {
		return raw
	}
	u.RawQuery = Masked
	return u.String()
}
