package app

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// An idle Consume stream asks the server once a heartbeat, as a nats.go
// client's Consume does, not every second (its pull waits for the first
// message until the heartbeat is due): a thousand idle subscribers cost a
// thousand requests a second before.
func TestAnIdleConsumeStreamPullsOnceAHeartbeat(t *testing.T) {
	ns := natstest.Start(t)
	o := testOptions(t)
	o.NATSURL, o.StreamSubjects = ns.ClientURL(), []string{"orders.>"}
	p := start(t, o)
	cc, _ := grpcClients(t, p.GRPC)
	var pulls atomic.Int32
	nc := natstest.Connect(t, ns)
	if _, err := nc.Subscribe("$JS.API.CONSUMER.MSG.NEXT.ORDERS.billing", func(*nats.Msg) { pulls.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	st, err := cc.Consume(t.Context(), &jetgatev1.ConsumeRequest{Stream: "ORDERS", Consumer: "billing", Heartbeat: durationpb.New(3 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	for beats := 0; beats < 3; {
		r, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if len(r.GetMessages()) == 0 {
			beats++
		}
	}
	// 9s or so: a pull a second asked 9 and more.
	if n := pulls.Load(); n > 5 {
		t.Fatalf("%d pulls over three heartbeats of 3s; want one a heartbeat or so", n)
	}
}

// A stop ends an idle stream at once, its pull (a heartbeat long) cut.
func TestAStopEndsAnIdleStreamAtOnce(t *testing.T) {
	o := testOptions(t)
	o.ShutdownGrace = 5 * time.Minute
	p := start(t, o)
	cc, _ := grpcClients(t, p.GRPC)
	st, err := cc.Consume(t.Context(), &jetgatev1.ConsumeRequest{Stream: "ORDERS", Consumer: "billing", Heartbeat: durationpb.New(5 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() {
		for {
			if _, err := st.Recv(); err != nil {
				ended <- err
				return
			}
		}
	}()
	natstest.Eventually(t, 10*time.Second, "the stream's idle pull open", func() bool {
		return gauge(t, p.HTTP, `jetgate_pulls_open{consumer="billing",stream="ORDERS"} 1`)
	})
	stopped := make(chan error, 1)
	go func() { stopped <- p.Stop() }()
	select {
	case err := <-ended:
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("the stream ended with %v; want UNAVAILABLE", err)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("the idle stream was still open 25s into a stop (grace 5m, its pull 30s)")
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

// gauge reports whether /metrics has the line.
func gauge(t *testing.T, addr, line string) bool {
	t.Helper()
	return strings.Contains(scrape(t, "http://"+addr+"/metrics"), line)
}
