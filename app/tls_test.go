package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// pki is a throwaway CA with one server and one client certificate.
type pki struct {
	dir                           string
	server, client                tls.Certificate
	pool                          *x509.CertPool
	caFile, clientCert, clientKey string
	serverCert, serverKey         string
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir(), pool: x509.NewCertPool()}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "jetgate test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p.pool.AddCert(ca)
	p.caFile = p.write(t, "ca.pem", "CERTIFICATE", caDER)
	issue := func(serial int64, usage x509.ExtKeyUsage, name string) (tls.Certificate, string, string) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, _ := x509.MarshalECPrivateKey(key)
		cf := p.write(t, name+".pem", "CERTIFICATE", der)
		kf := p.write(t, name+"-key.pem", "EC PRIVATE KEY", keyDER)
		c, err := tls.LoadX509KeyPair(cf, kf)
		if err != nil {
			t.Fatal(err)
		}
		return c, cf, kf
	}
	p.server, p.serverCert, p.serverKey = issue(2, x509.ExtKeyUsageServerAuth, "server")
	p.client, p.clientCert, p.clientKey = issue(3, x509.ExtKeyUsageClientAuth, "client")
	return p
}

func (p *pki) write(t *testing.T, name, typ string, der []byte) string {
	t.Helper()
	f := filepath.Join(p.dir, name)
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// startTLSServer runs JetStream that only speaks TLS and wants a client
// certificate signed by the test CA.
func startTLSServer(t *testing.T, p *pki) *natsserver.Server {
	t.Helper()
	ns, err := natsserver.NewServer(&natsserver.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
		TLS: true, TLSVerify: true, TLSTimeout: 2,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{p.server},
			ClientCAs:    p.pool,
			ClientAuth:   tls.RequireAndVerifyClientCert,
			MinVersion:   tls.VersionTLS12,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("TLS server did not start")
	}
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	// The stream, made over a connection of the test's own.
	nc, err := nats.Connect(ns.ClientURL(), nats.RootCAs(p.caFile), nats.ClientCert(p.clientCert, p.clientKey))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	return ns
}

func TestRunOverMutualTLS(t *testing.T) {
	p := newPKI(t)
	ns := startTLSServer(t, p)
	o := testOptions(t)
	o.NATSURL = ns.ClientURL()
	o.NATSTLSCA, o.NATSTLSCert, o.NATSTLSKey = p.caFile, p.clientCert, p.clientKey
	proc := start(t, o)
	cc, sc := grpcClients(t, proc.GRPC)
	seq := publish(t, sc, "orders.tls", "over mTLS")
	msgs := fetch(t, cc, "billing", 1, 5*time.Second)
	if len(msgs) != 1 || msgs[0].GetMetadata().GetStreamSeq() != seq || string(msgs[0].GetData()) != "over mTLS" {
		t.Fatalf("fetched %v, want the message published over mTLS (seq %d)", msgs, seq)
	}
	if err := proc.Stop(); err != nil {
		t.Fatal(err)
	}
}

func TestRunRefusesBadNATSSecurityOptions(t *testing.T) {
	p := newPKI(t)
	ns := startTLSServer(t, p)
	for name, tc := range map[string]struct {
		set  func(*Options)
		want string
	}{
		"no client certificate": {func(o *Options) { o.NATSTLSCA = p.caFile }, "--nats-url"},
		"unknown CA":            {func(o *Options) { o.NATSTLSCert, o.NATSTLSKey = p.clientCert, p.clientKey }, "--nats-url"},
		"cert without key":      {func(o *Options) { o.NATSTLSCA, o.NATSTLSCert = p.caFile, p.clientCert }, "--nats-tls-key"},
		"missing CA file":       {func(o *Options) { o.NATSTLSCA = filepath.Join(p.dir, "nope.pem") }, "--nats-tls-ca"},
		"missing creds file":    {func(o *Options) { o.NATSCreds = filepath.Join(p.dir, "nope.creds") }, "--nats-creds"},
	} {
		t.Run(name, func(t *testing.T) {
			o := testOptions(t)
			o.NATSURL = ns.ClientURL()
			tc.set(&o)
			if err := runErr(t, o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v does not name %s", err, tc.want)
			}
		})
	}
}
