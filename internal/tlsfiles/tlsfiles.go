// Package tlsfiles serves TLS for jetgate's gRPC and HTTP listeners from
// certificate files that are reloaded when they change, optionally requiring
// client certificates (mTLS).
//
// Reloading is lazy: a handshake at most once per second reads the files and,
// when their contents have changed, loads them again. There is no goroutine
// and nothing to stop.
package tlsfiles

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Files names a listener's certificate, key and (for mTLS) client CA bundle.
type Files struct{ Cert, Key, ClientCA string }

// Config returns a *tls.Config for a server that reads Cert/Key (and ClientCA)
// now — failing with an error naming the file when one is missing or bad — and
// again on a later handshake whenever one of the files' contents has changed,
// checked at most once per second. A reload that fails keeps
// serving the last good files and logs a warning to log (slog.Default() when
// nil); it is retried when a file changes again.
//
// With ClientCA set, clients must present a certificate that verifies against
// the current CA bundle (tls.RequireAndVerifyClientCert). The config accepts
// TLS 1.2 and later and offers both "h2" and "http/1.1", so one config serves
// gRPC and HTTP.
func Config(f Files, log *slog.Logger) (*tls.Config, error) {
	r, err := newReloader(f, log, time.Second)
	if err != nil {
		return nil, err
	}
	return r.serverConfig(), nil
}

// CertIfGiven is cfg (of Config) for a listener that asks for a client
// certificate but takes a handshake without one: a certificate given must
// still verify against the client CA, and the server requires one per
// request where it must (the REST listener: everything but the probes,
// which the kubelet calls without one).
func CertIfGiven(cfg *tls.Config) *tls.Config {
	out := cfg.Clone()
	if out.ClientAuth != tls.RequireAndVerifyClientCert {
		return out
	}
	out.ClientAuth = tls.VerifyClientCertIfGiven
	if get := cfg.GetConfigForClient; get != nil {
		out.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			c, err := get(hello)
			if err != nil || c == nil {
				return c, err
			}
			c = c.Clone()
			c.ClientAuth = tls.VerifyClientCertIfGiven
			return c, nil
		}
	}
	return out
}

// nextProtos is what every config offers in ALPN, in server preference order;
// a fresh slice each time, as callers may append to a config's NextProtos.
func nextProtos() []string { return []string{"h2", "http/1.1"} }

// stamp is what a file held when last looked at; a change of it triggers a
// reload. It is the contents' digest, not the modification time and size:
// a copy that keeps timestamps, or a file system with coarse ones, can
// replace a file with one of the same size and time.
type stamp struct {
	exists bool
	sum    [sha256.Size]byte
}

// reloader holds the files' current config and reloads it on handshakes.
type reloader struct {
	files    Files
	log      *slog.Logger
	interval time.Duration // minimum time between two looks at the files

	mu      sync.Mutex
	checked time.Time   // when the files were last looked at
	seen    [3]stamp    // of Cert, Key and ClientCA as last read
	current *tls.Config // per-handshake config from the last good read
}

func newReloader(f Files, log *slog.Logger, interval time.Duration) (*reloader, error) {
	if f.Cert == "" || f.Key == "" {
		return nil, errors.New("tls: both a certificate file and a key file are required")
	}
	if log == nil {
		log = slog.Default()
	}
	r := &reloader{files: f, log: log, interval: interval}
	// Stat before reading: a write racing the read then shows up as a change
	// at the next check.
	seen := r.look()
	cfg, err := load(f)
	if err != nil {
		return nil, err
	}
	r.seen, r.current, r.checked = seen, cfg, time.Now()
	return r, nil
}

// serverConfig is the config handed to listeners. Its fields other than
// GetConfigForClient only describe what every per-handshake config enforces.
func (r *reloader) serverConfig() *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		NextProtos:         nextProtos(),
		ClientAuth:         r.current.ClientAuth,
		GetConfigForClient: r.configForClient,
	}
}

func (r *reloader) configForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := time.Now(); now.Sub(r.checked) >= r.interval {
		r.checked = now
		r.reloadIfChanged()
	}
	return r.current, nil
}

// reloadIfChanged reads the files again if their contents changed since
// the last read. A failed read is not retried until the files change again, so a
// bad file logs one warning, not one per handshake. r.mu must be held.
func (r *reloader) reloadIfChanged() {
	seen := r.look()
	if seen == r.seen {
		return
	}
	r.seen = seen
	cfg, err := load(r.files)
	if err != nil {
		r.log.Warn("TLS files changed but failed to load; serving the previous certificate",
			"cert", r.files.Cert, "key", r.files.Key, "client_ca", r.files.ClientCA, "err", err)
		return
	}
	r.current = cfg
	leaf := cfg.Certificates[0].Leaf
	r.log.Info("TLS files reloaded", "cert", r.files.Cert, "subject", leaf.Subject.String(),
		"serial", leaf.SerialNumber.String(), "not_after", leaf.NotAfter)
}

// look reads the files (a few kilobytes, at most once an interval, and
// only when handshakes come) and stamps each.
func (r *reloader) look() [3]stamp {
	var s [3]stamp
	for i, name := range []string{r.files.Cert, r.files.Key, r.files.ClientCA} {
		if name == "" {
			continue
		}
		if data, err := os.ReadFile(name); err == nil {
			s[i] = stamp{exists: true, sum: sha256.Sum256(data)}
		}
	}
	return s
}

// load reads the files into the config one handshake uses.
func load(f Files) (*tls.Config, error) {
	cert, err := loadKeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		NextProtos:   nextProtos(),
	}
	if f.ClientCA != "" {
		data, err := os.ReadFile(f.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("tls client CA: %w", err)
		}
		cas, err := parseCerts(data)
		if err != nil {
			return nil, fmt.Errorf("tls client CA %s: %w", f.ClientCA, err)
		}
		pool := x509.NewCertPool()
		for _, ca := range cas {
			pool.AddCert(ca)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// loadKeyPair is tls.LoadX509KeyPair with errors that say which file is bad.
func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls key: %w", err)
	}
	if _, err := parseCerts(certPEM); err != nil {
		return tls.Certificate{}, fmt.Errorf("tls certificate %s: %w", certFile, err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls key %s for certificate %s: %w", keyFile, certFile, err)
	}
	return cert, nil
}

// parseCerts returns the certificates in PEM data, failing when there is none
// or one does not parse; blocks of other types are skipped.
func parseCerts(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	return certs, nil
}
