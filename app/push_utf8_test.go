package app

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// An endpoint whose answer's reason phrase is not UTF-8 (any HTTP server
// may write one): the pusher keeps resp.Status as its last error, and
// GetConsumer must still answer (protobuf strings carry no invalid UTF-8).
func TestGetConsumerWithAPushLastErrorNotInUTF8(t *testing.T) {
	var answered atomic.Int32
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		_, _ = buf.WriteString("HTTP/1.1 503 Serv\xffce \xfe\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		_ = buf.Flush()
		answered.Add(1)
	}))
	t.Cleanup(rc.Close)
	file := writeConfig(t, fmt.Sprintf(`
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers:
  - stream: ORDERS
    name: shipping
    push: {url: "%s/hooks", retry: {min: 1s, max: 1s}}
`, rc.URL))
	p := start(t, fileOptions(t, file))
	cc, sc := grpcClients(t, p.GRPC)
	publish(t, sc, "orders.new", "hello")
	var st *jetgatev1.GetConsumerResponse
	var err error
	natstest.Eventually(t, 10*time.Second, "a push failed and GetConsumer told of it (or failed)", func() bool {
		if answered.Load() == 0 {
			return false
		}
		st, err = cc.GetConsumer(ctxT(t), &jetgatev1.GetConsumerRequest{Stream: "ORDERS", Consumer: "shipping"})
		return err != nil || st.GetPush().GetLastError() != ""
	})
	if err != nil {
		t.Fatalf("GetConsumer after the endpoint answered a reason phrase not in UTF-8: %v", err)
	}
	t.Logf("last error %q", st.GetPush().GetLastError())
}
