package replica_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

// A scrape while NATS stalls answers with what the replica knows itself,
// not after the request timeout: the read of the server's gauges it starts
// goes on, and once NATS answers again a later scrape has them.
func TestAScrapeDoesNotWaitOnAStalledNATS(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	proxy := natstest.StartProxy(t, ns.Addr().String())
	conn := proxy.Connect(t)
	const requestTimeout = 15 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg := prometheus.NewRegistry()
	r, err := replica.New(ctx, replica.Options{Conn: conn, Keys: token.RandomKeyring(), Metrics: reg, RequestTimeout: requestTimeout,
		Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing", AckWait: 30 * time.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "orders.1", []byte("m")); err != nil {
		t.Fatal(err)
	}
	if res, err := r.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 1, Expires: 5 * time.Second}); err != nil || len(res.Messages) != 1 {
		t.Fatalf("fetch: %v %v", res, err)
	}

	proxy.Blackhole()
	scraped := make(chan error, 1)
	go func() {
		_, err := reg.Gather()
		scraped <- err
	}()
	select {
	case err := <-scraped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(requestTimeout * 2 / 3):
		t.Fatalf("a scrape in a NATS stall has not answered after %v: it waits on the server (request timeout %v)", requestTimeout*2/3, requestTimeout)
	}
	if !hasSeries(t, reg, "jetgate_leases_live", "billing") || hasSeries(t, reg, "jetgate_oldest_unacked_age_seconds", "billing") {
		t.Fatal("the scrape in the stall lacks the lease gauge, or has an oldest age it could not have read")
	}

	proxy.Thaw()
	if err := conn.ForceReconnect(); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 4*requestTimeout, "the oldest age read once NATS answers again", func() bool {
		return hasSeries(t, reg, "jetgate_oldest_unacked_age_seconds", "billing")
	})
}
