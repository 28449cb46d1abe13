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
// the caller's identity: its Common Name ("client") is the principal. No
// certificate, or one from another CA, gets no further than the handshake.
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

	get := func(certs ...tls.Certificate) (int, error) {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.pool, Certificates: certs, MinVersion: tls.VersionTLS12}}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest(http.MethodPost, "https://"+proc.HTTP+"/v1/streams/ORDERS/consumers/billing:fetch", strings.NewReader(`{"expires":"0s"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.ReadAll(resp.Body)
		return resp.StatusCode, nil
	}
	if code, err := get(); err == nil {
		t.Errorf("REST without a client certificate: status %d; want the handshake refused", code)
	}
	if code, err := get(other.client); err == nil {
		t.Errorf("REST with a certificate of another CA: status %d; want the handshake refused", code)
	}
	if code, err := get(p.client); err != nil || code != http.StatusOK {
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
