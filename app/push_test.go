package app

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/push"
)

// A consumer with a push block in the file is pushed by the process: the
// message published over gRPC arrives signed at the endpoint, and
// GetConsumer shows the push state over gRPC and REST.
func TestConfigPushesAConsumer(t *testing.T) {
	got := make(chan *http.Request, 10)
	bodies := make(chan []byte, 10)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("whsec_ZGVtby1zZWNyZXQtb2YtdGhlLWpldGdhdGUtcHVzaC1leGFtcGxl\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := writeConfig(t, fmt.Sprintf(`
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers:
  - stream: ORDERS
    name: shipping
    push: {url: "%s/hooks?key=abc", signing_secret_file: %s}
`, rc.URL, secret))
	p := start(t, fileOptions(t, file))
	cc, sc := grpcClients(t, p.GRPC)
	publish(t, sc, "orders.new", "hello")
	var r *http.Request
	select {
	case r = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("nothing pushed")
	}
	v, err := push.NewVerifier(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(r.Header, <-bodies, time.Now()); err != nil || r.URL.RawQuery != "key=abc" {
		t.Fatalf("signature %v, query %q", err, r.URL.RawQuery)
	}
	natstest.Eventually(t, 5*time.Second, "acked", func() bool {
		return consumerInfo(t, p.NATS, "ORDERS", "shipping").AckFloor.Stream == 1
	})
	st, err := cc.GetConsumer(ctxT(t), &jetgatev1.GetConsumerRequest{Stream: "ORDERS", Consumer: "shipping"})
	if err != nil {
		t.Fatal(err)
	}
	if ps := st.GetPush(); ps.GetUrl() != rc.URL+"/hooks" || !ps.GetEndpointUp() || ps.GetLastError() != "" {
		t.Fatalf("push state %v", ps)
	}
	resp, err := http.Get("http://" + p.HTTP + "/v1/streams/ORDERS/consumers/shipping")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Push struct {
			URL        string `json:"url"`
			EndpointUp bool   `json:"endpointUp"`
		} `json:"push"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Push.URL != rc.URL+"/hooks" || !body.Push.EndpointUp {
		t.Fatalf("REST GetConsumer: %v %+v", err, body)
	}
}
