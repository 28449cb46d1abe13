package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// A running process takes up certificate files replaced under it, the way
// an operator's tool replaces them (a temporary file renamed over the old
// one): new connections to both listeners get the new certificate, a half
// done rotation keeps the last good one without a failed handshake, and a
// replaced client CA decides whose certificates are accepted from then on.
func TestListenerTLSRotation(t *testing.T) {
	t.Run("server certificate", func(t *testing.T) {
		// Three CAs, one server certificate each; the client trusts all
		// three, so only the certificate tells which pair is served.
		a, b, c := newPKI(t), newPKI(t), newPKI(t)
		roots := x509.NewCertPool()
		for _, p := range []*pki{a, b, c} {
			roots.AppendCertsFromPEM(readFile(t, p.caFile))
		}
		names := map[string]tls.Certificate{"A": a.server, "B": b.server, "C": c.server}
		dir := t.TempDir()
		cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
		install(t, cert, a.serverCert)
		install(t, key, a.serverKey)

		logs := &syncBuffer{}
		o := fileOptions(t, writeConfig(t, fmt.Sprintf(`
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers: [{stream: ORDERS, name: billing}]
listen: {tls: {cert: %q, key: %q}}
`, cert, key)))
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
		call := tlsCaller{proc: start(t, o), roots: roots}

		// served makes a fresh call to each listener, fails the test if
		// either fails (a rotation never costs a handshake), and names the
		// certificate each presented.
		served := func() (grpcCert, restCert string) {
			t.Helper()
			leaf, err := call.grpc(t)
			if err != nil {
				t.Fatalf("gRPC GetConsumer: %v", err)
			}
			grpcCert = nameOf(leaf, names)
			state, code, err := call.rest(t)
			if err != nil || code != http.StatusOK {
				t.Fatalf("REST GET consumer: %d %v", code, err)
			}
			return grpcCert, nameOf(state.PeerCertificates[0], names)
		}
		waitFor := func(want string) {
			t.Helper()
			natstest.Eventually(t, 10*time.Second, "both listeners present certificate "+want, func() bool {
				g, r := served()
				return g == want && r == want
			})
		}

		if g, r := served(); g != "A" || r != "A" {
			t.Fatalf("at start gRPC presents %s, REST %s; want A on both", g, r)
		}

		install(t, cert, b.serverCert)
		install(t, key, b.serverKey)
		waitFor("B")

		// Half done: C's certificate with B's key does not load. The process
		// says so once, at the first check after the change; until then and
		// after it B is served.
		failed := func() int { return logs.count("level=WARN", "cert="+cert) }
		before := failed()
		install(t, cert, c.serverCert)
		natstest.Eventually(t, 10*time.Second, "a warning that C's certificate does not load with B's key", func() bool {
			if g, r := served(); g != "B" || r != "B" {
				t.Fatalf("with C's certificate and B's key on disk gRPC presents %s, REST %s; want B, the last good pair", g, r)
			}
			return failed() > before
		})
		if g, r := served(); g != "B" || r != "B" {
			t.Fatalf("after the failed reload gRPC presents %s, REST %s; want B", g, r)
		}

		install(t, key, c.serverKey)
		waitFor("C")
	})

	t.Run("client CA", func(t *testing.T) {
		// The listeners keep one server certificate; the client CA file is
		// replaced by another CA's, whose client has the same name.
		old, next := newPKI(t), newPKI(t)
		dir := t.TempDir()
		cert, key, ca := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "client-ca.pem")
		install(t, cert, old.serverCert)
		install(t, key, old.serverKey)
		install(t, ca, old.caFile)
		call := tlsCaller{proc: start(t, fileOptions(t, writeConfig(t, fmt.Sprintf(`
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers: [{stream: ORDERS, name: billing}]
listen: {tls: {cert: %q, key: %q, client_ca: %q}}
auth:
  mtls: true
  grants: [{principal: client, stream: ORDERS, consumers: [billing], actions: [read]}]
`, cert, key, ca)))), roots: old.pool}

		// accepted reports whether a fresh call to each listener with the
		// client certificate succeeds; a refused one must be refused at the
		// handshake, not by the API.
		accepted := func(client tls.Certificate) (grpcOK, restOK bool) {
			t.Helper()
			_, err := call.grpc(t, client)
			if err != nil && status.Code(err) != codes.Unavailable {
				t.Fatalf("gRPC GetConsumer: %v; want success or the handshake refused", err)
			}
			_, code, rerr := call.rest(t, client)
			if rerr == nil && code != http.StatusOK {
				t.Fatalf("REST GET consumer: status %d; want 200 or the handshake refused", code)
			}
			return err == nil, rerr == nil
		}

		if g, r := accepted(old.client); !g || !r {
			t.Fatalf("at start the old CA's client: gRPC accepted %v, REST %v; want both", g, r)
		}
		if g, r := accepted(next.client); g || r {
			t.Fatalf("at start the new CA's client: gRPC accepted %v, REST %v; want neither", g, r)
		}
		// A client that keeps TLS sessions resumes them (no certificate is
		// sent again); one from before the rotation must not outlive it.
		resuming := call
		resuming.sessions = tls.NewLRUClientSessionCache(4)
		for i := range 2 {
			state, code, err := resuming.rest(t, old.client)
			if err != nil || code != http.StatusOK {
				t.Fatalf("REST with a session cache at start: %d %v", code, err)
			}
			if i == 1 && !state.DidResume {
				t.Fatal("REST with a session cache did not resume its session; the check after the rotation would prove nothing")
			}
		}

		install(t, ca, next.caFile)
		natstest.Eventually(t, 10*time.Second, "both listeners accept the new CA's client", func() bool {
			g, r := accepted(next.client)
			return g && r
		})
		if g, r := accepted(old.client); g || r {
			t.Errorf("after the rotation the old CA's client: gRPC accepted %v, REST %v; want neither", g, r)
		}
		if state, code, err := resuming.rest(t, old.client); err == nil {
			t.Errorf("after the rotation the old CA's client resuming a session: status %d, resumed %v; want the handshake refused", code, state.DidResume)
		}
	})
}

// tlsCaller makes real calls, each on a connection of its own, as a client
// that trusts roots.
type tlsCaller struct {
	proc  *Process
	roots *x509.CertPool
	// sessions, if set, lets calls resume TLS sessions; without it every
	// call makes a full handshake.
	sessions tls.ClientSessionCache
}

func (c tlsCaller) config(certs []tls.Certificate) *tls.Config {
	return &tls.Config{RootCAs: c.roots, Certificates: certs, ClientSessionCache: c.sessions, MinVersion: tls.VersionTLS12}
}

// grpc calls GetConsumer on the gRPC listener, presenting certs, and returns
// the certificate the listener presented.
func (c tlsCaller) grpc(t *testing.T, certs ...tls.Certificate) (*x509.Certificate, error) {
	t.Helper()
	conn, err := grpc.NewClient(c.proc.GRPC, grpc.WithTransportCredentials(credentials.NewTLS(c.config(certs))))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var p peer.Peer
	r, err := jetgatev1.NewConsumerServiceClient(conn).GetConsumer(ctx,
		&jetgatev1.GetConsumerRequest{Stream: "ORDERS", Consumer: "billing"}, grpc.Peer(&p))
	if err != nil {
		return nil, err
	}
	if got := r.GetConfig().GetDurableName(); got != "billing" {
		t.Fatalf("gRPC GetConsumer answered for %q; want billing", got)
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.PeerCertificates) == 0 {
		t.Fatalf("gRPC call not over TLS with a server certificate: %T", p.AuthInfo)
	}
	return info.State.PeerCertificates[0], nil
}

// rest gets the consumer from the REST listener, presenting certs, and
// returns the connection's TLS state and the status. err is a transport
// error, such as a refused handshake.
func (c tlsCaller) rest(t *testing.T, certs ...tls.Certificate) (*tls.ConnectionState, int, error) {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: c.config(certs), DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+c.proc.HTTP+"/v1/streams/ORDERS/consumers/billing", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode == http.StatusOK {
		var got struct {
			Config struct {
				DurableName string `json:"durableName"`
			} `json:"config"`
		}
		if err := json.Unmarshal(body, &got); err != nil || got.Config.DurableName != "billing" {
			t.Fatalf("REST GET consumer answered %s (%v); want billing's", body, err)
		}
	}
	if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
		t.Fatal("REST call not over TLS with a server certificate")
	}
	return resp.TLS, resp.StatusCode, nil
}

// nameOf names the certificate among names that leaf is, or describes it.
func nameOf(leaf *x509.Certificate, names map[string]tls.Certificate) string {
	for name, c := range names {
		if bytes.Equal(leaf.Raw, c.Certificate[0]) {
			return name
		}
	}
	return fmt.Sprintf("an unknown certificate (serial %v, issuer %v)", leaf.SerialNumber, leaf.Issuer)
}

// install replaces path with the contents of from as a deployment tool
// does: written to a temporary file in the same directory, then renamed over
// path, so that a reader finds the old file or the new, never a part.
func install(t *testing.T, path, from string) {
	t.Helper()
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(readFile(t, from)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// syncBuffer collects the log of a process, written from its goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// count is the number of lines that contain every one of parts.
func (b *syncBuffer) count(parts ...string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for line := range strings.Lines(b.buf.String()) {
		if all(line, parts) {
			n++
		}
	}
	return n
}

func all(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
