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

// The oldest unacknowledged age follows messages that come while the ack
// floor stays where it is: a read that found nothing pending is read again
// once something is. Before, its 0 was kept until the floor moved, so a
// consumer nobody fetched from showed 0 for good, and the alerts built on
// the gauge never fired for it (an operator's review).
func TestTheOldestAgeFollowsMessagesThatCameAfterAnEmptyRead(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg := prometheus.NewRegistry()
	r, err := replica.New(ctx, replica.Options{Conn: natstest.Connect(t, ns), Keys: token.RandomKeyring(), Metrics: reg,
		Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	natstest.Eventually(t, 10*time.Second, "the oldest age read, with nothing pending", func() bool {
		return hasSeries(t, reg, "jetgate_oldest_unacked_age_seconds", "billing")
	})
	if age := gaugeValue(t, reg, "jetgate_oldest_unacked_age_seconds", "billing"); age != 0 {
		t.Fatalf("oldest age %v with nothing pending; want 0", age)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "orders.1", []byte("m")); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 15*time.Second, "the oldest age of the message nobody fetched", func() bool {
		return gaugeValue(t, reg, "jetgate_oldest_unacked_age_seconds", "billing") > 0
	})
}

// gaugeValue is the value of the gauge name{…=label} in reg; the test
// fails where there is none.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	m := seriesOf(t, reg, name, label)
	if m == nil {
		t.Fatalf("no %s{%s}", name, label)
	}
	return m.GetGauge().GetValue()
}
