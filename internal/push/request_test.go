package push_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/push"
)

// json: the body is the Message as Fetch returns it over REST, less its
// token and lease.
func TestTheJSONFormatIsTheMessageLessTokenAndLease(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	e.replica(consumerCfg(), push.Config{URL: rc.URL, Format: push.FormatJSON})
	e.publish("orders.new", "hello", nats.Header{"X-Tag": {"a", "b"}})
	p := rc.next(t, 5*time.Second)
	if ct := p.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	var m map[string]any
	if err := json.Unmarshal(p.body, &m); err != nil {
		t.Fatalf("%v: %s", err, p.body)
	}
	if _, ok := m["token"]; ok {
		t.Fatalf("a token in the push: %s", p.body)
	}
	if _, ok := m["leaseDeadline"]; ok {
		t.Fatalf("a lease deadline in the push: %s", p.body)
	}
	md, _ := m["metadata"].(map[string]any)
	if m["subject"] != "orders.new" || m["data"] != "aGVsbG8=" || md["streamSeq"] != "1" || md["stream"] != stream || md["numPending"] != "0" {
		t.Fatalf("body %s", p.body)
	}
	if h, _ := m["headers"].(map[string]any); h["X-Tag"] == nil {
		t.Fatalf("headers missing: %s", p.body)
	}
}

// cloudevents: binary content mode, the data as the body; attributes the
// publisher gave stand.
func TestTheCloudEventsFormatIsBinaryContentMode(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	e.replica(consumerCfg(), push.Config{URL: rc.URL, Format: push.FormatCloudEvents})
	e.publish("orders.new", "hello", nats.Header{"Ce-Type": {"com.example.order"}, "Content-Type": {"text/plain"}})
	p := rc.next(t, 5*time.Second)
	for k, want := range map[string]string{
		"Ce-Specversion": "1.0", "Ce-Id": stream + ".1", "Ce-Type": "com.example.order",
		"Ce-Source": "/jetgate/streams/" + stream, "Ce-Subject": "orders.new", "Content-Type": "text/plain",
	} {
		if got := p.header.Get(k); got != want {
			t.Fatalf("%s %q, want %q", k, got, want)
		}
	}
	if _, err := time.Parse(time.RFC3339Nano, p.header.Get("Ce-Time")); err != nil || string(p.body) != "hello" {
		t.Fatalf("ce-time %q, body %q", p.header.Get("Ce-Time"), p.body)
	}
}

// Headers HTTP cannot carry, hop-by-hop ones, credentials and jetgate's own
// names are not passed on from a message.
func TestAMessageCannotSetWhatJetgateOrHTTPOwns(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	e.replica(consumerCfg(), push.Config{URL: rc.URL, BearerTokenFile: writeFile(t, "s3cret-token\n")})
	e.publish("orders.new", "x", nats.Header{
		"Authorization": {"Bearer forged"}, "Webhook-Id": {"forged"}, "Jetgate-Stream": {"forged"},
		"Connection": {"close"}, "X-Ok": {"yes"},
	})
	p := rc.next(t, 5*time.Second)
	for k, want := range map[string]string{
		"Authorization": "Bearer s3cret-token", "Webhook-Id": stream + ".1", "Jetgate-Stream": stream, "X-Ok": "yes",
	} {
		if got := p.header.Values(k); len(got) != 1 || got[0] != want {
			t.Fatalf("%s %q, want [%q]", k, got, want)
		}
	}
}

// TLS to the endpoint: verified against the configured CA, with the
// configured client certificate presented.
func TestTLSToTheEndpointWithAClientCertificate(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	clientCert, clientKey, clientPool := selfSigned(t, dir, "client")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != "client" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientPool}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	e.replica(consumerCfg(), push.Config{URL: srv.URL, TLSCA: ca, TLSCert: clientCert, TLSKey: clientKey})
	e.publish("orders.new", "x", nil)
	e.drained(5 * time.Second)
	if dl := e.deadLetters(); len(dl) != 0 {
		t.Fatalf("refused by the endpoint: %v", dl[0].Header)
	}
}

// selfSigned writes a self-signed certificate and key for cn into dir and
// returns their paths and a pool that trusts it.
func selfSigned(t *testing.T, dir, cn string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, cn+".pem"), filepath.Join(dir, cn+"-key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
