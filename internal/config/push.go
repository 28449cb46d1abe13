package config

import (
	"errors"
	"net/url"
	"time"

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

// validatePush checks consumer k's push block at p, its files included.
func (c *Config) validatePush(p string, k Consumer) *Error {
	if k.Push == nil {
		return nil
	}
	err := k.pushConfig().Validate()
	var fe *push.FieldError
	if errors.As(err, &fe) {
		return c.errorf(p+".push."+fe.Field, "%v", fe.Err)
	}
	if err != nil {
		return c.errorf(p+".push", "%v", err)
	}
	return nil
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
