package tlsfiles

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// ca is a throwaway certificate authority.
type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
	pool *x509.CertPool
}

func newCA(t *testing.T, name string) *ca {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &ca{cert: cert, key: key, pem: pemBlock("CERTIFICATE", der), pool: pool}
}

// leaf is a certificate issued by a ca, in PEM and ready for crypto/tls.
type leaf struct {
	certPEM, keyPEM []byte
	tls             tls.Certificate
}

func (c *ca) issue(t *testing.T, serial int64, cn string, usage x509.ExtKeyUsage) leaf {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	l := leaf{certPEM: pemBlock("CERTIFICATE", der), keyPEM: pemBlock("EC PRIVATE KEY", keyDER)}
	if l.tls, err = tls.X509KeyPair(l.certPEM, l.keyPEM); err != nil {
		t.Fatal(err)
	}
	return l
}

func (c *ca) server(t *testing.T, serial int64) leaf {
	return c.issue(t, serial, fmt.Sprint("server-", serial), x509.ExtKeyUsageServerAuth)
}

func (c *ca) client(t *testing.T, serial int64) leaf {
	return c.issue(t, serial, fmt.Sprint("client-", serial), x509.ExtKeyUsageClientAuth)
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// write replaces a file's contents and moves its modification time forward,
// so the change is visible whatever the file system's mtime granularity.
func write(t *testing.T, path string, data []byte) {
	t.Helper()
	mtime := time.Now()
	if fi, err := os.Stat(path); err == nil {
		mtime = fi.ModTime().Add(time.Minute)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// writeFiles puts a server certificate (and a client CA bundle when caPEM is
// not nil) into a fresh directory and names them.
func writeFiles(t *testing.T, server leaf, caPEM []byte) Files {
	t.Helper()
	dir := t.TempDir()
	f := Files{Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key")}
	write(t, f.Cert, server.certPEM)
	write(t, f.Key, server.keyPEM)
	if caPEM != nil {
		f.ClientCA = filepath.Join(dir, "client-ca.pem")
		write(t, f.ClientCA, caPEM)
	}
	return f
}

// logBuffer collects log output written from handshake goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLog() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}

// serve accepts TLS connections on a random loopback port; each one that
// completes its handshake is sent "ok" and closed.
func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				tc := tls.Server(c, cfg)
				_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
				if tc.Handshake() == nil {
					_, _ = tc.Write([]byte("ok"))
				}
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

// handshake connects with cfg and waits for the server's "ok", which in TLS 1.3
// is where a client learns that the server rejected its certificate.
func handshake(addr string, cfg *tls.Config) (tls.ConnectionState, error) {
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: cfg}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, make([]byte, 2)); err != nil {
		return tls.ConnectionState{}, err
	}
	return c.(*tls.Conn).ConnectionState(), nil
}

// eventually retries cond until it returns nil, failing the test after a
// deadline with cond's last error.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// wantSerial is a condition: a new handshake sees the server certificate serial.
func wantSerial(addr string, cfg *tls.Config, serial int64) func() error {
	return func() error {
		st, err := handshake(addr, cfg)
		if err != nil {
			return err
		}
		if got := st.PeerCertificates[0].SerialNumber.Int64(); got != serial {
			return fmt.Errorf("server certificate serial %d, want %d", got, serial)
		}
		return nil
	}
}

// start serves the files through a reloader that checks them every interval.
func start(t *testing.T, f Files, log *slog.Logger, interval time.Duration) string {
	t.Helper()
	r, err := newReloader(f, log, interval)
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, r.serverConfig())
}

func TestConfigServesCertificate(t *testing.T) {
	serverCA := newCA(t, "server CA")
	f := writeFiles(t, serverCA.server(t, 10), nil)
	cfg, err := Config(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinVersion != tls.VersionTLS12 || cfg.ClientAuth != tls.NoClientCert {
		t.Errorf("MinVersion %x, ClientAuth %v; want TLS 1.2 and no client certificate", cfg.MinVersion, cfg.ClientAuth)
	}
	addr := serve(t, cfg)

	for _, proto := range []string{"h2", "http/1.1"} {
		st, err := handshake(addr, &tls.Config{RootCAs: serverCA.pool, NextProtos: []string{proto}})
		if err != nil {
			t.Fatalf("ALPN %s: %v", proto, err)
		}
		if got := st.PeerCertificates[0]; got.Subject.CommonName != "server-10" || got.SerialNumber.Int64() != 10 {
			t.Errorf("server certificate %s serial %d, want server-10 serial 10", got.Subject.CommonName, got.SerialNumber)
		}
		if st.NegotiatedProtocol != proto {
			t.Errorf("negotiated %q, want %q", st.NegotiatedProtocol, proto)
		}
	}
	if _, err := handshake(addr, &tls.Config{RootCAs: serverCA.pool, MaxVersion: tls.VersionTLS11}); err == nil {
		t.Error("a TLS 1.1 client handshook, want refused")
	}
	if _, err := handshake(addr, &tls.Config{RootCAs: newCA(t, "other CA").pool}); err == nil {
		t.Error("a client trusting another CA handshook, want refused")
	}
}

func TestRotatedCertificateIsServedWithoutRestart(t *testing.T) {
	serverCA := newCA(t, "server CA")
	f := writeFiles(t, serverCA.server(t, 10), nil)
	log, logs := newLog()
	addr := start(t, f, log, 20*time.Millisecond)
	client := &tls.Config{RootCAs: serverCA.pool}
	if err := wantSerial(addr, client, 10)(); err != nil {
		t.Fatal(err)
	}

	next := serverCA.server(t, 11)
	write(t, f.Cert, next.certPEM)
	write(t, f.Key, next.keyPEM)
	eventually(t, "rotated certificate", wantSerial(addr, client, 11))
	if !strings.Contains(logs.String(), "TLS files reloaded") {
		t.Errorf("no reload logged:\n%s", logs)
	}
}

// A replacement of the same size and modification time (a copy that keeps
// timestamps, a file system with coarse ones) is still a rotation.
func TestRotationKeepingSizeAndTimeIsServed(t *testing.T) {
	serverCA := newCA(t, "server CA")
	first, next := serverCA.server(t, 10), serverCA.server(t, 12)
	// PEM ignores what follows its blocks: pad each pair to one length.
	pad := func(a, b []byte) ([]byte, []byte) {
		n := max(len(a), len(b))
		return append(a, bytes.Repeat([]byte("\n"), n-len(a))...), append(b, bytes.Repeat([]byte("\n"), n-len(b))...)
	}
	first.certPEM, next.certPEM = pad(first.certPEM, next.certPEM)
	first.keyPEM, next.keyPEM = pad(first.keyPEM, next.keyPEM)
	f := writeFiles(t, first, nil)
	addr := start(t, f, nil, 20*time.Millisecond)
	client := &tls.Config{RootCAs: serverCA.pool}
	if err := wantSerial(addr, client, 10)(); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		path string
		data []byte
	}{{f.Cert, next.certPEM}, {f.Key, next.keyPEM}} {
		fi, err := os.Stat(r.path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(r.path, r.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(r.path, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
		if after, err := os.Stat(r.path); err != nil || after.Size() != fi.Size() || !after.ModTime().Equal(fi.ModTime()) {
			t.Fatalf("%s not replaced in place at the same size and time: %v", r.path, err)
		}
	}
	eventually(t, "certificate of the same size and time", wantSerial(addr, client, 12))
}

func TestFilesAreCheckedAtMostOncePerInterval(t *testing.T) {
	serverCA := newCA(t, "server CA")
	f := writeFiles(t, serverCA.server(t, 10), nil)
	addr := start(t, f, nil, time.Hour)
	next := serverCA.server(t, 11)
	write(t, f.Cert, next.certPEM)
	write(t, f.Key, next.keyPEM)
	if err := wantSerial(addr, &tls.Config{RootCAs: serverCA.pool}, 10)(); err != nil {
		t.Fatalf("within the check interval: %v", err)
	}
}

func TestClientCertificatesAreVerifiedAgainstReloadedCA(t *testing.T) {
	serverCA, oldCA, nextCA := newCA(t, "server CA"), newCA(t, "old client CA"), newCA(t, "new client CA")
	f := writeFiles(t, serverCA.server(t, 10), oldCA.pem)
	log, _ := newLog()
	r, err := newReloader(f, log, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	cfg := r.serverConfig()
	if cfg.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Errorf("ClientAuth %v, want RequireAndVerifyClientCert", cfg.ClientAuth)
	}
	addr := serve(t, cfg)

	oldClient, newClient := oldCA.client(t, 20), nextCA.client(t, 21)
	with := func(c *leaf) *tls.Config {
		cfg := &tls.Config{RootCAs: serverCA.pool}
		if c != nil {
			cfg.Certificates = []tls.Certificate{c.tls}
		}
		return cfg
	}
	if _, err := handshake(addr, with(nil)); err == nil {
		t.Error("a client without a certificate handshook, want refused")
	}
	if _, err := handshake(addr, with(&newClient)); err == nil {
		t.Error("a client certificate of an unconfigured CA was accepted")
	}
	if _, err := handshake(addr, with(&oldClient)); err != nil {
		t.Fatalf("a client certificate of the configured CA: %v", err)
	}

	// A client that can resume a session made with the old CA.
	resuming := with(&oldClient)
	resuming.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	if _, err := handshake(addr, resuming); err != nil {
		t.Fatal(err)
	}
	if st, err := handshake(addr, resuming); err != nil || !st.DidResume {
		t.Fatalf("second handshake: resumed %v, err %v; want a resumed session", st.DidResume, err)
	}

	write(t, f.ClientCA, nextCA.pem)
	eventually(t, "client certificate of the new CA", func() error {
		_, err := handshake(addr, with(&newClient))
		return err
	})
	if _, err := handshake(addr, with(&oldClient)); err == nil {
		t.Error("after rotating the client CA, a certificate of the old CA was accepted")
	}
	if _, err := handshake(addr, resuming); err == nil {
		t.Error("after rotating the client CA, a session made with the old CA was resumed")
	}
}

func TestBadFilesAtStartAreNamed(t *testing.T) {
	serverCA := newCA(t, "server CA")
	good := serverCA.server(t, 10)
	other := serverCA.server(t, 11)
	garbage := []byte("not PEM at all\n")
	badDER := pemBlock("CERTIFICATE", []byte("not DER"))
	for name, tc := range map[string]struct {
		files func(f *Files)
		want  []string // what the error names; "cert", "key" and "ca" stand for the paths
	}{
		"missing cert":      {func(f *Files) { os.Remove(f.Cert) }, []string{"cert"}},
		"missing key":       {func(f *Files) { os.Remove(f.Key) }, []string{"key"}},
		"missing client CA": {func(f *Files) { os.Remove(f.ClientCA) }, []string{"ca"}},
		"garbage cert":      {func(f *Files) { write(t, f.Cert, garbage) }, []string{"cert"}},
		"undecodable cert":  {func(f *Files) { write(t, f.Cert, badDER) }, []string{"cert"}},
		"garbage key":       {func(f *Files) { write(t, f.Key, garbage) }, []string{"key"}},
		"key of another":    {func(f *Files) { write(t, f.Key, other.keyPEM) }, []string{"key", "cert"}},
		"garbage client CA": {func(f *Files) { write(t, f.ClientCA, garbage) }, []string{"ca"}},
		"bad client CA":     {func(f *Files) { write(t, f.ClientCA, badDER) }, []string{"ca"}},
	} {
		t.Run(name, func(t *testing.T) {
			f := writeFiles(t, good, serverCA.pem)
			tc.files(&f)
			_, err := Config(f, nil)
			if err == nil {
				t.Fatal("Config succeeded, want an error")
			}
			paths := map[string]string{"cert": f.Cert, "key": f.Key, "ca": f.ClientCA}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), paths[w]) {
					t.Errorf("error %q does not name %s", err, paths[w])
				}
			}
		})
	}
	t.Run("no key file", func(t *testing.T) {
		f := writeFiles(t, good, nil)
		if _, err := Config(Files{Cert: f.Cert}, nil); err == nil {
			t.Fatal("Config without a key file succeeded")
		}
	})
}

func TestBadFilesAfterStartKeepTheLastGoodOnes(t *testing.T) {
	serverCA, clientCA := newCA(t, "server CA"), newCA(t, "client CA")
	f := writeFiles(t, serverCA.server(t, 10), clientCA.pem)
	log, logs := newLog()
	addr := start(t, f, log, 20*time.Millisecond)
	client := &tls.Config{RootCAs: serverCA.pool, Certificates: []tls.Certificate{clientCA.client(t, 20).tls}}

	// breakFile writes bad contents, waits for the failed reload to be logged
	// and checks that handshakes still get the last good certificate.
	breakFile := func(path string, data []byte) {
		t.Helper()
		warnings := strings.Count(logs.String(), "level=WARN")
		write(t, path, data)
		eventually(t, "warning about "+path, func() error {
			if _, err := handshake(addr, client); err != nil {
				return err
			}
			if strings.Count(logs.String(), "level=WARN") == warnings {
				return errors.New("no new warning logged")
			}
			return nil
		})
		if !strings.Contains(logs.String(), path) {
			t.Errorf("warning does not name %s:\n%s", path, logs)
		}
		if err := wantSerial(addr, client, 10)(); err != nil {
			t.Fatalf("after a bad %s: %v", path, err)
		}
	}
	breakFile(f.Cert, []byte("garbage"))
	next := serverCA.server(t, 11)
	breakFile(f.Cert, next.certPEM) // a rotation half done: the old key does not match
	breakFile(f.ClientCA, []byte("garbage"))

	write(t, f.Key, next.keyPEM)
	write(t, f.ClientCA, clientCA.pem)
	eventually(t, "recovery once the files are good", wantSerial(addr, client, 11))
}
