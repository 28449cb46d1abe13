package app

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/natstest"
)

// oldestOf reads jetgate_oldest_unacked_age_seconds of ORDERS/billing from
// a scrape; -1 when the series is absent.
func oldestOf(t *testing.T, addr string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^jetgate_oldest_unacked_age_seconds\{consumer="billing",stream="ORDERS"\} (\S+)$`).
		FindStringSubmatch(scrape(t, "http://"+addr+"/metrics"))
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A configured consumer deleted on the server (nats consumer rm), or whose
// stream was deleted, holds no message any more: its oldest unacknowledged
// age falls to 0 (or goes), rather than staying at the age last read for as
// long as it stays deleted, which kept JetgateOldestUnackedTooOld firing
// for a consumer that no longer exists and the dashboard showing an age
// that no longer grows.
func TestTheOldestAgeOfADeletedConsumerDoesNotStay(t *testing.T) {
	for _, c := range []struct {
		what   string
		delete func(js jetstream.JetStream) error
	}{
		{"the consumer deleted", func(js jetstream.JetStream) error { return js.DeleteConsumer(ctxT(t), "ORDERS", "billing") }},
		{"its stream deleted", func(js jetstream.JetStream) error { return js.DeleteStream(ctxT(t), "ORDERS") }},
	} {
		t.Run(c.what, func(t *testing.T) {
			p := start(t, testOptions(t))
			_, sc := grpcClients(t, p.GRPC)
			publish(t, sc, "orders.1", "x")
			natstest.Eventually(t, 10*time.Second, "an age read for the pending message", func() bool {
				return oldestOf(t, p.HTTP) > 0
			})
			nc, err := nats.Connect(p.NATS)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			js, _ := jetstream.New(nc)
			if err := c.delete(js); err != nil {
				t.Fatal(err)
			}
			natstest.Eventually(t, 10*time.Second, "the age at 0 or gone", func() bool {
				return oldestOf(t, p.HTTP) <= 0
			})
		})
	}
}
