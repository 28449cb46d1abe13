package app

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// With TLS and client certificates on both listeners, the certificate is
// the caller's identity: its Common Name ("client") is the principal. One
// from another CA gets no further than the handshake, and on gRPC no
// certificate either. On REST a request without one is answered 401, but
// for the probes, which the kubelet calls with none: a pod with client
// certificates never became ready, and was restarted for its liveness.
func TestMutualTLSListeners(t *testing.T) {
	p, other := newPKI(t), newPKI(t)
	file := writeConfig(t, fmt.Sprintf(`
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers: [{stream: ORDERS, name: billing}]
listen: {tls: {cert: %q, key: %q, client_ca: %q}}
auth:
  mtls: true
  grants: [{principal: client, stream: ORDERS, consumers: [billing], actions: [fetch, settle, publish]}]
`, p.serverCert, p.serverKey, p.caFile))
	proc := start(t, fileOptions(t, file))

	dial := func(certs ...tls.Certificate) jetgatev1.ConsumerServiceClient {
		conn, err := grpc.NewClient(proc.GRPC, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
			RootCAs: p.pool, Certificates: certs, MinVersion: tls.VersionTLS12,
		})))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		return jetgatev1.NewConsumerServiceClient(conn)
	}
	fetch := func(c jetgatev1.ConsumerServiceClient) error {
		_, err := c.Fetch(ctxT(t), &jetgatev1.FetchRequest{Stream: "ORDERS", Consumer: "billing", Expires: durationpb.New(100 * time.Millisecond)})
		return err
	}
	if err := fetch(dial()); status.Code(err) != codes.Unavailable {
		t.Errorf("gRPC without a client certificate: %v; want the handshake refused", err)
	}
	if err := fetch(dial(other.client)); status.Code(err) != codes.Unavailable {
		t.Errorf("gRPC with a certificate of another CA: %v; want the handshake refused", err)
	}
	if err := fetch(dial(p.client)); err != nil {
		t.Errorf("gRPC with the right certificate: %v", err)
	}

	do := func(method, path string, certs ...tls.Certificate) (int, string, error) {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.pool, Certificates: certs, MinVersion: tls.VersionTLS12}}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest(method, "https://"+proc.HTTP+path, strings.NewReader(`{"expires":"0s"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), nil
	}
	const fetchPath = "/v1/streams/ORDERS/consumers/billing:fetch"
	for _, path := range []string{fetchPath, "/metrics", "/openapi.json", "/console/"} {
		method := http.MethodGet
		if path == fetchPath {
			method = http.MethodPost
		}
		if code, body, err := do(method, path); err != nil || code != http.StatusUnauthorized || !strings.Contains(body, "client certificate is required") {
			t.Errorf("REST %s without a client certificate: %d %.200s %v; want 401 saying one is required", path, code, body, err)
		}
	}
	for _, probe := range []string{"/healthz", "/readyz"} {
		if code, _, err := do(http.MethodGet, probe); err != nil || code != http.StatusOK {
			t.Errorf("the probe %s without a client certificate (as the kubelet calls it): %d %v", probe, code, err)
		}
	}
	if code, _, err := do(http.MethodPost, fetchPath, other.client); err == nil {
		t.Errorf("REST with a certificate of another CA: status %d; want the handshake refused", code)
	}
	if code, _, err := do(http.MethodPost, fetchPath, p.client); err != nil || code != http.StatusOK {
		t.Errorf("REST with the right certificate: %d %v", code, err)
	}
	// Plaintext is not served at all.
	if resp, err := http.Get("http://" + proc.HTTP + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("the REST listener answered plaintext HTTP")
		}
	}
}
