package app

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/natstest"
)

// A push-only jetgate (no caller makes an RPC) whose NATS stays connected
// while its JetStream stops answering (here, JetStream disabled on the
// server; a cluster without quorum or a leaf whose hub left looks the same
// to jetgate) pushes nothing more. Before, no series that
// JetgateNATSUnavailable reads moved: jetgate_nats_connected stayed 1, no
// call failed Unavailable (none was made), no settle was counted
// NATS_UNAVAILABLE (a pusher's settles are not counted there), and the
// pusher's failing pulls, tried again in silence, showed nowhere. Now they
// count in jetgate_push_nats_failures_total, which stays 0 while JetStream
// answers.
func TestY11PushOnlyJetStreamAwayShowsInMetrics(t *testing.T) {
	ns := natstest.Start(t)
	acked := make(chan struct{}, 10)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
		acked <- struct{}{}
	}))
	t.Cleanup(hook.Close)
	o := fileOptions(t, writeConfig(t, fmt.Sprintf(`
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers:
  - {stream: ORDERS, name: shipping, push: {url: "%s/hooks"}}
`, hook.URL)))
	o.NATSURL, o.NATSListen = ns.ClientURL(), ""
	o.Given["nats-url"] = true
	p := start(t, o)
	metrics := "http://" + p.HTTP + "/metrics"

	nc := natstest.Connect(t, ns)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	for i := range n {
		if _, err := js.Publish(ctxT(t), "orders.new", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		select {
		case <-acked:
		case <-time.After(10 * time.Second):
			t.Fatal("not everything was pushed")
		}
	}
	natstest.Eventually(t, 5*time.Second, "the pushes acked", func() bool {
		return consumerInfo(t, ns.ClientURL(), "ORDERS", "shipping").AckFloor.Stream == n
	})
	body := scrape(t, metrics)
	if got := y11PushFailures(t, body); len(got) == 0 || y11Sum(got) != 0 {
		t.Fatalf("while JetStream answers, the push failures are %v; want a series of each op, all 0", got)
	}

	ns.DisableJetStream()
	natstest.Eventually(t, 20*time.Second, "the push's failed pulls counted", func() bool {
		return y11PushFailures(t, scrape(t, metrics))["pull"] > 0
	})
	// What the alert read before did not move: the connection is up, no
	// call failed, no settle was counted NATS_UNAVAILABLE.
	body = scrape(t, metrics)
	for _, not := range []string{`code="Unavailable"`, `result="NATS_UNAVAILABLE"`} {
		if strings.Contains(body, not) {
			t.Errorf("/metrics has %s", not)
		}
	}
	if !strings.Contains(body, "\njetgate_nats_connected 1\n") || !nc.IsConnected() {
		t.Errorf("the NATS connection went away: the test's premise does not hold")
	}
}

var y11FailureLine = regexp.MustCompile(`(?m)^jetgate_push_nats_failures_total\{consumer="shipping",op="(\w+)",stream="ORDERS"\} (\S+)$`)

// y11PushFailures are the shipping pusher's NATS failures by op, as scraped.
func y11PushFailures(t *testing.T, body string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, m := range y11FailureLine.FindAllStringSubmatch(body, -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatal(err)
		}
		out[m[1]] = v
	}
	return out
}

func y11Sum(m map[string]float64) (s float64) {
	for _, v := range m {
		s += v
	}
	return s
}
