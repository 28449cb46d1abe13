package reliability

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/jetgate/jetgate/internal/natstest"
)

// What TestFaultNATSConnectionStalls holds a stalled replica to: jetgate's
// stall watch gives a connection it waits on up after 2s of messages out
// and none in, then 2s without an answer to a PING, on a 250ms tick
// (app/stall.go): 4–5.5s after the stall on the 2-core machine, so within
// noticeBound on a loaded one, and well before the pings' 20–30s. A
// caller's RPC that waits on the stalled connection fails with UNAVAILABLE
// after jetgate's request timeout (5s), or at once once the connection is
// given up, so within failBound.
const (
	noticeBound = 10 * time.Second
	failBound   = 8 * time.Second
)

// TestFaultNATSConnectionStalls puts a TCP proxy of the test's between each
// of two jetgate processes and NATS and, while callers publish, fetch and
// settle through both at random (random answers, ack_wait 4s), makes one
// proxy stop forwarding without closing anything, as a network or a proxy
// that drops the traffic does (one stall of 8s short, four of 15s long, the
// replicas in turn), then lets traffic through again.
//
// Asserts: the stalled replica gives its connection up within noticeBound
// of the stall (its jetgate_nats_stalls_total counts it: the stall watch,
// not the pings' 30s), and is ready again once the path is back; every
// caller's RPC that failed did so within failBound, none ran into its own
// deadline; no settle landed on a delivery it was not issued for; lost 0,
// and the consumer drained on the server.
func TestFaultNATSConnectionStalls(t *testing.T) {
	const ackWait = 4 * time.Second
	n, stalls := scale(1000, 10000), scale(1, 4)
	stallFor := time.Duration(scale(8, 15)) * time.Second

	bin, ns, nc, keyFile := processFixture(t)
	var procs []*process
	var proxies []*natstest.Proxy
	for range 2 {
		px := natstest.StartProxy(t, ns.Addr().String())
		procs = append(procs, startProcess(t, bin, "--nats-url", "nats://"+px.Addr, "--token-key-file", keyFile,
			"--ack-wait", ackWait.String()))
		proxies = append(proxies, px)
	}
	check := newDeliveryCheck()
	d := &Driver{Stream: stream, Consumer: consumer, Checker: NewChecker(), Batch: 50,
		Expires: 500 * time.Millisecond, RPCTimeout: 15 * time.Second, Quiesce: ackWait + 4*time.Second,
		PublishGap: time.Duration(scale(8, 4)) * time.Millisecond,
		Answer:     randomAnswers, Watch: check}
	for _, p := range procs {
		d.Publishers, d.Consumers = append(d.Publishers, p.strm), append(d.Consumers, p.cons)
	}

	var noticed, back []time.Duration
	r := run(t, d, n, 4, time.Duration(scale(2, 8))*time.Minute, func(ctx context.Context) {
		for i := range stalls {
			waitPublished(ctx, d.Checker, (i+1)*n/(stalls+2))
			if ctx.Err() != nil {
				return
			}
			p, px := procs[i%2], proxies[i%2]
			before := stallsOf(t, p)
			px.Blackhole()
			at := time.Now()
			// /readyz fails as the connection is given up; /metrics can
			// take a while to answer in a stall (its server gauges ask
			// NATS), so it is read after, for who gave it up.
			for ready(p) && ctx.Err() == nil && time.Since(at) < stallFor {
				backoff(ctx, 50*time.Millisecond)
			}
			took := time.Since(at)
			if stallsOf(t, p) == before {
				took = -1 // not the stall watch
			}
			noticed = append(noticed, took)
			backoff(ctx, stallFor-time.Since(at))
			px.Thaw()
			thawed := time.Now()
			for !ready(p) && ctx.Err() == nil {
				backoff(ctx, 50*time.Millisecond)
			}
			back = append(back, time.Since(thawed))
		}
	})
	st := d.Stats()
	t.Logf("stalls noticed after %v; ready again %v after the path was back", noticed, back)
	if wrong := check.verdict(); len(wrong) > 0 {
		t.Fatalf("%d settles landed on a delivery they were not issued for, e.g. %s", len(wrong), wrong[0])
	}
	if len(noticed) != stalls {
		t.Fatalf("%d of %d stalls made", len(noticed), stalls)
	}
	for _, took := range noticed {
		if took < 0 || took > noticeBound {
			t.Fatalf("a stalled connection was given up after %v (-1: not by the stall watch within the stall); want within %v: %v",
				took, noticeBound, noticed)
		}
	}
	if st.Errors[codes.DeadlineExceeded] > 0 || st.SlowestError > failBound {
		t.Fatalf("callers waited on a stalled replica: %d RPCs ran into their deadline, the slowest failed RPC took %v (want within %v)",
			st.Errors[codes.DeadlineExceeded], st.SlowestError, failBound)
	}
	if st.Errors[codes.Unavailable] == 0 {
		t.Fatal("no caller saw UNAVAILABLE: the stall was not in the callers' way")
	}
	drainServer(t, d, nc, r.Published, ackWait+10*time.Second)
}

// stallsOf reads p's jetgate_nats_stalls_total.
func stallsOf(t *testing.T, p *process) float64 {
	t.Helper()
	f, err := metricOf(p, "jetgate_nats_stalls_total")
	if err != nil {
		t.Errorf("read jetgate_nats_stalls_total: %v", err)
	}
	return f
}

// ready reports whether p's /readyz answers 200 (connected to NATS).
func ready(p *process) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/readyz", p.httpAddr), nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
